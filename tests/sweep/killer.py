"""Run ``geoprobe`` in this process and kill it (``os._exit(137)``, as SIGKILL would: no ``finally``, no
handler) just before its N-th file-system commit: every ``os.replace`` (each atomic write becomes visible
there: records, results, pages, manifests, a worker's files), ``os.mkdir`` and ``os.unlink``; or, given
``~TEXT`` (``~TEXT#K``), before the first (the K-th) commit whose description holds TEXT. With N = 0 it
counts the commits and prints ``commits: K`` on exit. Used by tests/sweep/test_kills.py and the hostile round
(``python -m tests.sweep.hostile_round``).

    python -m tests.sweep.killer N geoprobe-args...
    python -m tests.sweep.killer "~replace .geoprobe-run.json" geoprobe-args...
"""

from __future__ import annotations

import os
import sys
import traceback


def arm(n: int, text: str | None = None, k: int = 1) -> list[str]:
    """Patch the commits: die before the ``n``-th (n ≥ 1) or the ``k``-th that holds ``text``, or only
    count (n = 0, no text); returns the log of what each commit was."""
    seen: list[str] = []
    hits = [0]

    def wrap(name: str, fn):
        def inner(*args, **kwargs):
            seen.append(f"{name} {args[-1] if name == 'replace' else args[0]}")
            hits[0] += text is not None and text in seen[-1]
            if (n and len(seen) == n) or (text is not None and text in seen[-1] and hits[0] == k):
                sys.stderr.write(f"killed before commit {n}: {seen[-1]}\n")
                sys.stderr.flush()
                os._exit(137)
            return fn(*args, **kwargs)

        return inner

    os.replace = wrap("replace", os.replace)
    os.mkdir = wrap("mkdir", os.mkdir)
    os.unlink = wrap("unlink", os.unlink)
    return seen


def main() -> None:
    at = sys.argv[1]
    n, text, k = 0, None, 1
    if at.startswith("~"):
        text, _, nth = at[1:].partition("#")
        k = int(nth or 1)
    else:
        n = int(at)
    sys.argv = ["geoprobe", *sys.argv[2:]]
    seen = arm(n, text, k)
    code = 0
    try:
        from geoprobe.cli.main import main as geoprobe

        geoprobe()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    except BaseException:  # noqa: BLE001 - shown, as the CLI would with --debug
        traceback.print_exc()
        code = 1
    if n == 0 and text is None:
        sys.stderr.write(f"commits: {len(seen)}\n")
        for line in seen:
            sys.stderr.write(f"commit {line}\n")
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
