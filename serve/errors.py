"""Errors raised while starting, talking to or stopping a vLLM server."""

from __future__ import annotations


class ServeError(RuntimeError):
    """Base of every serving error; the message says what to do about it."""


class VLLMNotInstalledError(ServeError):
    """The ``vllm`` package cannot be imported in this Python."""


class PortInUseError(ServeError):
    """Something already listens on the requested host and port."""


class AdapterError(ServeError):
    """A LoRA adapter folder is unusable or the server refused to load/unload it."""


class ServerStartError(ServeError):
    """The server exited or never became healthy; the message carries the log's last lines."""


class ServerRestartLimitError(ServeError):
    """A server a stage started died once more than ``serve.max_restarts`` allows restarting it."""
