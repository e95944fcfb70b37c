"""CoA Studio trainer: embedded benchmark, models, pretraining and the AutoCoA SFT stages."""

__version__ = "0.1.0"
