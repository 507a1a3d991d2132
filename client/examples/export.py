"""Export what people recorded, as the trainers read it: the comparisons (`webgpt train rm`
reads the file as it is) or the demonstrations, one JSON line a row. Rows are written as
they arrive, so memory stays flat however many there are. Needs a key with the `admin`
role.

WEBGPT_BASE_URL=http://127.0.0.1:8080 python client/examples/export.py comparisons --out c.jsonl
"""

import argparse
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

from webgpt_client import APIError, APIStatusError, Client


def write(rows: Iterable[dict[str, Any]], out: TextIO) -> int:
    """Write the rows as JSON lines; how many there were."""
    count = 0
    for row in rows:
        out.write(json.dumps(row) + "\n")
        count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description="Export the service's feedback as JSON lines.")
    parser.add_argument(
        "what", nargs="?", default="comparisons", choices=("comparisons", "demonstrations")
    )
    parser.add_argument("--out", type=Path, help="the file to write (default: stdout)")
    args = parser.parse_args()
    what: str = args.what
    with Client() as client:
        try:
            if what == "comparisons":
                export = client.admin.export_comparisons()
            else:
                export = client.admin.export_demonstrations()
            with export as rows:
                if args.out is None:
                    count = write(rows, sys.stdout)
                else:
                    # Written beside the file and moved over it when whole: an export cut
                    # off half way leaves no file that looks complete to a trainer.
                    partial = args.out.with_name(args.out.name + ".partial")
                    with partial.open("w") as out:
                        count = write(rows, out)
                    os.replace(partial, args.out)
        except APIStatusError as error:  # 403: the key lacks the admin role
            sys.exit(f"{error.status_code} {error.type}: {error.message}")
        except APIError as error:  # the connection or the service broke off mid-export
            sys.exit(f"export failed: {error}")
    noun = what if count != 1 else what.removesuffix("s")
    # On stderr, so stdout holds nothing but the rows.
    print(f"{count} {noun} exported to {args.out or 'stdout'}", file=sys.stderr)


if __name__ == "__main__":
    main()
