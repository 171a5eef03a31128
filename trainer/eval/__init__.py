"""trainer.eval"""
