"""trainer.losses"""
