"""trainer.env"""
