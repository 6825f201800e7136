"""Where votes are computed. Only a backend reads private records (spec: architecture)."""

from dpevolve.backends.base import Backend
from dpevolve.backends.fused import FusedBackend, fused_available
from dpevolve.backends.gpu import GpuBackend, gpu_available
from dpevolve.backends.local import LocalBackend

__all__ = [
    "Backend",
    "FusedBackend",
    "GpuBackend",
    "LocalBackend",
    "fused_available",
    "gpu_available",
]
