"""Tweet stream for the Storm top-N app (examples/storm): a file of one user name a line.

Each line is a tweet by ``user<k>``, k drawn from a Zipf distribution over ``--users``
users: user k (0-based) tweets with probability proportional to 1 / (k + 1) ** ``--zipf``
(0 is uniform; the larger, the more skewed, user0 the most popular). The stream is
deterministic for a ``--seed`` (numpy's ``default_rng``)::

    python examples/storm/tweets.py --tweets 100000 --users 10000 --zipf 1.1 --seed 1 -o tweets.txt

Importable: `write_tweets` writes a file, `draw_users` gives the user ids, `top_users` is
the exact ranking of a file (the reference the topology's output is checked against).
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence

try:
    import numpy as np
except ImportError as missing:          # e.g. the system python instead of the project's venv
    sys.exit(f"tweets.py: {missing.name} is missing: run it with the project's Python "
             "(scripts/setup.sh makes .venv; then .venv/bin/python examples/storm/tweets.py)")

DEFAULT_TWEETS = 100_000
DEFAULT_USERS = 10_000
DEFAULT_ZIPF = 1.1
DEFAULT_SEED = 1
_CHUNK = 1 << 20                        # tweets drawn and written at a time


def user_name(user: int) -> str:
    """The name of user id ``user``: ``user<id>``."""
    return f"user{user}"


def draw_users(tweets: int, users: int, zipf: float, seed: int) -> np.ndarray:
    """The user ids of ``tweets`` tweets, Zipf(``zipf``) over ids 0..``users``-1."""
    if tweets < 0 or users < 1 or zipf < 0:
        raise ValueError(f"want tweets >= 0, users >= 1 and zipf >= 0, not {tweets}, {users}, "
                         f"{zipf}")
    weights = 1.0 / np.arange(1, users + 1, dtype=np.float64) ** zipf
    rng = np.random.default_rng(seed)
    return rng.choice(users, size=tweets, p=weights / weights.sum())


def write_tweets(path: str, tweets: int = DEFAULT_TWEETS, users: int = DEFAULT_USERS,
                 zipf: float = DEFAULT_ZIPF, seed: int = DEFAULT_SEED) -> None:
    """Write ``tweets`` lines to ``path``, each the name of the user who tweeted it."""
    ids = draw_users(tweets, users, zipf, seed)
    with open(path, "w", encoding="ascii") as out:
        for start in range(0, tweets, _CHUNK):
            out.writelines(user_name(u) + "\n" for u in ids[start:start + _CHUNK].tolist())


def top_users(path: str, n: int) -> str:
    """The exact top ``n`` users of a tweets file as the total ranker prints them
    (``rank user count`` lines; by count descending, then name ascending)."""
    with open(path) as f:
        counts = Counter(line.strip() for line in f if line.strip())
    ranked = sorted(counts.items(), key=lambda uc: (-uc[1], uc[0]))[:n]
    return "".join(f"{i + 1} {user} {count}\n" for i, (user, count) in enumerate(ranked))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line (see the module's docstring)."""
    parser = argparse.ArgumentParser(
        description="Write a stream of tweets for the Storm top-N app: one user name a line, "
                    "users drawn from a Zipf distribution.")
    parser.add_argument("--tweets", type=int, default=DEFAULT_TWEETS,
                        help=f"lines to write (default {DEFAULT_TWEETS})")
    parser.add_argument("--users", type=int, default=DEFAULT_USERS,
                        help=f"distinct users, named user0, user1, ... (default {DEFAULT_USERS})")
    parser.add_argument("--zipf", type=float, default=DEFAULT_ZIPF,
                        help="Zipf exponent of user popularity, 0 for uniform "
                             f"(default {DEFAULT_ZIPF})")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED,
                        help="random seed; a seed always gives the same stream "
                             f"(default {DEFAULT_SEED})")
    parser.add_argument("-o", "--output", required=True, help="the file to write")
    args = parser.parse_args(argv)
    if args.tweets < 0:
        parser.error("--tweets must be 0 or more")
    if args.users < 1:
        parser.error("--users must be 1 or more")
    if args.zipf < 0:
        parser.error("--zipf must be 0 or more")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Write the stream the command line asks for."""
    args = parse_args(argv)
    write_tweets(args.output, args.tweets, args.users, args.zipf, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
