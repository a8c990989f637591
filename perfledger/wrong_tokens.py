"""Wrong upload tokens, counted for the whole server process, not per browser session: a fresh session (a reconnect,
a new tab, a script) meets the wait the last wrong token set, so guesses cannot be spread over sessions.

Each wrong token in a row doubles the wait before the next token is checked (1, 2, 4 ... 30 s); a right one resets
it. Checks are made one at a time, so two sessions cannot both check in the same window.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

FIRST_S, MAX_S = 1.0, 30.0


def backoff_s(wrong: int, first_s: float = FIRST_S) -> float:
    """The wait before checking the next token after `wrong` wrong ones in a row: 0, 1, 2, 4 ... 30 s."""
    return 0.0 if wrong <= 0 else min(MAX_S, first_s * 2 ** min(wrong - 1, 16))


@dataclass(frozen=True, slots=True)
class Attempt:
    """A token's fate: checked (right or not, and the wrong ones in a row now), or not yet (wait_s to go)."""

    right: bool = False
    wrong: int = 0
    wait_s: float = 0.0

    @property
    def checked(self) -> bool:
        return self.wait_s <= 0


@dataclass
class WrongTokens:
    """The server's record of wrong tokens in a row and when the next may be checked (a monotonic time)."""

    first_s: float = FIRST_S
    wrong: int = 0
    until: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def attempt(self, token: str, is_right: Callable[[str], bool], now: Callable[[], float] = time.monotonic) -> Attempt:
        """Check `token` if the wait has passed (else say how long is left), and record the outcome."""
        with self._lock:
            left = self.until - now()
            if left > 0:
                return Attempt(wrong=self.wrong, wait_s=left)
            if is_right(token):
                self.wrong, self.until = 0, 0.0
                return Attempt(right=True)
            self.wrong += 1
            self.until = now() + self.next_wait_s()
            return Attempt(wrong=self.wrong)

    def next_wait_s(self) -> float:
        return backoff_s(self.wrong, self.first_s)

    def reset(self) -> None:
        with self._lock:
            self.wrong, self.until = 0, 0.0


SERVER = WrongTokens()  # one per process: every session of this dashboard server shares it
