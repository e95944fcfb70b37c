"""CoA Studio trainer: embedded benchmark, models, the AutoCoA pipeline (pretraining, SFT-1/2/3, RL-1/RL-2 GRPO with
OTC-GRPO), evaluation, results table and ONNX export."""

__version__ = "0.1.0"
