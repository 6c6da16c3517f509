"""`python -m bench`: the side-by-side comparison with the existing host (bench/side_by_side.py).

`python -m bench quick [...]` runs the first, ours-only benchmark (bench/quick.py).
"""

from __future__ import annotations

import sys

if __name__ == "__main__":
    if sys.argv[1:2] == ["quick"]:
        from bench.quick import main as quick_main

        quick_main(sys.argv[2:])
    else:
        from bench.side_by_side import main

        main()
