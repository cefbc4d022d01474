"""A worker process of drift's cold API build (``apisource.build_apis``): requests on standard
input, replies on standard output (pickles between two processes of this program). Anything
else the code it runs prints goes to standard error, never into the replies."""

from __future__ import annotations

import gc
import os
import sys

from bot.adapters.apisource import serve


def main() -> None:
    # a short-lived process building object trees that all stay alive until it ends: the
    # cycle collector's passes over them found nothing and took a quarter of their CPU
    gc.disable()
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    serve(sys.stdin.buffer, replies)


if __name__ == "__main__":
    main()
