"""perfscope: send inference requests, kernel timings, operators and custom series from Python
code to a perfscope server.

    import perfscope
    client = perfscope.Client("http://127.0.0.1:8080")
    with client.request(model="llama", version="2") as r:
        for token in generate(prompt):
            r.token()

Standard library only. See Client for what each helper sends.
"""

from .client import Client, KernelTimer, Request, Run, Stats
from .events import EventError, validate

__all__ = ["Client", "EventError", "KernelTimer", "Request", "Run", "Stats", "validate"]
__version__ = "0.1.0"
