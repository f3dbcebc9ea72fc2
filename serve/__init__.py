"""Serving: start vLLM's OpenAI-compatible server (server.py) with the settings for this hardware
(hardware.py), load LoRA adapters at run time (adapters.py). Config: config.py (ServeConfig)."""
