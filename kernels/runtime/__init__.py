"""The CPU runtime: launching, the CPU executor (interpret, record, replay), graph capture, the launch target
and compiling for CUDA targets. It imports no kernel module."""
