"""What ``verbose`` shows: iteration lines, summary lines and progress bars.

The levels, the same for every estimator and :func:`multikernel.mkl_path`:

- ``0``: nothing.
- ``1``: INFO records on the ``multikernel`` logger: one per outer iteration of a fit (its
  certificate), the points of a path with their ``C`` (after the path), and one summary line
  at the end of every fit.
- ``2`` or more: progress bars (`tqdm <https://tqdm.github.io>`_, the optional ``progress``
  extra) instead of the iteration lines: over the iterations (SVRG: epochs) of a fit, the
  points of a path, the binary problems of a multiclass fit, the probability folds, the
  folds and candidates of the CV estimators, and the kernels of a Gram stack; the summary
  lines stay. Without tqdm, level 2 logs as level 1.

Every record states a certificate whose relative gap ``(P − D)/max(|P|, 1e-12)``
(``src/result.rs``) follows from the primal ``P`` and dual ``D`` printed beside it: the
engine's gap is that of the best primal and best dual values *so far*, so an iterate that is
not the best prints its own values apart from the certificate's, and a restricted
(working-set) iterate, which has no primal value of the whole problem, says so.
"""

from __future__ import annotations

import logging
import math
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

_logger = logging.getLogger("multikernel")


class Bar(Protocol):
    """What the estimators call on a progress bar (tqdm's methods of the same names)."""

    def update(self, n: int = 1) -> Any: ...

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> Any: ...

    def close(self) -> Any: ...


class _NoBar:
    """The bar of ``verbose < 2``, or of a machine without tqdm: draws nothing."""

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass


def _terminal() -> bool:
    """Whether bars can be drawn: stderr is a terminal, or a Jupyter kernel shows it. A log
    written to a file or a pipe would keep every redraw of every bar (nested ones included),
    so there ``verbose=2`` logs lines as ``verbose=1`` does."""
    try:
        if sys.stderr is not None and sys.stderr.isatty():
            return True
    except (AttributeError, ValueError):  # a replaced or closed stderr
        return False
    return "ipykernel" in sys.modules


def _tqdm() -> Any:
    """tqdm's bar class, or None when tqdm is not installed (it is an optional extra) or
    stderr is not a terminal (:func:`_terminal`)."""
    if not _terminal():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def bars_on(verbose: int) -> bool:
    """Whether ``verbose`` draws progress bars here (level 2 and tqdm installed)."""
    return verbose >= 2 and _tqdm() is not None


def ensure_handler() -> None:
    """Make INFO records of the ``multikernel`` logger visible: a stderr handler when logging
    is not configured, and the INFO level when the logger's is higher."""
    if not _logger.hasHandlers():
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        _logger.addHandler(handler)
    if _logger.getEffectiveLevel() > logging.INFO:
        _logger.setLevel(logging.INFO)


def info(msg: str, *args: Any) -> None:
    """One INFO record on the ``multikernel`` logger, made visible (:func:`ensure_handler`)."""
    ensure_handler()
    _logger.info(msg, *args)


@contextmanager
def bar(verbose: int, total: int | None, desc: str, unit: str, leave: bool = True) -> Iterator[Bar]:
    """A tqdm bar when ``verbose ≥ 2`` and tqdm is installed, else one that draws nothing;
    closed on exit. Inner bars (``leave=False``) vanish when done, so nested loops leave
    one line on the terminal."""
    cls = _tqdm() if verbose >= 2 else None
    if cls is None:
        yield _NoBar()
        return
    ensure_handler()
    b = cls(total=total, desc=desc, unit=unit, leave=leave, dynamic_ncols=True)
    try:
        yield b
    finally:
        b.close()


def counter(b: Bar) -> Callable[[int], None]:
    """A callback that moves ``b`` to a running count (the engine reports totals so far)."""
    shown = 0

    def update(done: int) -> None:
        nonlocal shown
        b.update(done - shown)
        shown = done

    return update


def relative_gap(primal: float, dual: float) -> float:
    """The engine's relative gap (``relative_gap`` in ``src/result.rs``)."""
    return (primal - dual) / max(abs(primal), 1e-12)


def _digits(gap: float) -> int:
    """Significant digits for a primal and a dual value so that their printed values give
    the printed gap to about 0.1 % (a gap of 1e-6 needs ten digits of P and D)."""
    if not math.isfinite(gap) or gap == 0.0:
        return 7 if not math.isfinite(gap) else 17
    return min(17, max(7, 4 + math.ceil(-math.log10(abs(gap)))))


def certificate(primal: float, dual: float, gap: float) -> str:
    """``primal P, dual D, gap G``, with as many digits of P and D as G needs; when D is
    −∞ (a kernel is not PSD: no dual value certifies), the gap is +∞ and the line says why."""
    k = _digits(gap) - 1
    text = f"primal {primal:.{k}e}, dual {dual:.{k}e}, gap {gap:.3e}"
    if dual == -math.inf:
        text += " (no certified dual value: a kernel is not PSD)"
    return text


class IterationLog:
    """The ``on_iteration(primal, dual, gap, active, seconds)`` callback of a verbose fit.

    At ``verbose=1`` one record per outer iteration whose gap follows from the primal and
    dual printed beside it: the engine's gap is that of the smallest primal value so far
    (``P*``, tracked here) and the largest certified dual value so far, ``D* = P* − gap ·
    max(|P*|, 1e-12)``. At ``verbose ≥ 2`` (tqdm installed) a bar over the iterations, the gap
    as postfix, instead.
    """

    def __init__(self, label: str, verbose: int, total: int | None, unit: str) -> None:
        self.label = label
        self.count = 0
        self.best = math.inf
        self.last_seconds = -math.inf
        cls = _tqdm() if verbose >= 2 else None
        self.bar: Any = None
        if cls is not None:
            self.bar = cls(total=total, desc=label, unit=unit, leave=False, dynamic_ncols=True)
        else:
            ensure_handler()

    def note(self, text: str) -> None:
        """Logs ``text`` about the fit (e.g. which solvers ran), under this fit's label."""
        if self.bar is None:
            _logger.info("%s: %s", self.label, text)

    def __call__(self, primal: float, dual: float, gap: float, active: int, seconds: float) -> None:
        self.count += 1
        if seconds < self.last_seconds:
            # A new tracker inside one native call (its clock restarts): its own P*.
            self.best = math.inf
        self.last_seconds = seconds
        if math.isfinite(primal):
            self.best = min(self.best, primal)
        if self.bar is not None:
            self.bar.set_postfix_str(f"gap {gap:.2e}, {active} active", refresh=False)
            self.bar.update()
            return
        _logger.info(
            "%s iteration %d: %s; %d active kernels, %.3f s",
            self.label, self.count, self.describe(primal, dual, gap), active, seconds,
        )  # fmt: skip

    def describe(self, primal: float, dual: float, gap: float) -> str:
        """The iterate and the certificate so far, in words whose numbers agree."""
        if not math.isfinite(self.best):
            # No primal value of the whole problem yet: the engine's gap is NaN or ∞ then.
            return (
                f"working-set step: dual {dual:.6e} (a step on a subset of the points or "
                "kernels; the first gap comes with the first check on all of them)"
            )
        best_dual = (
            -math.inf
            if math.isinf(gap) and gap > 0
            else self.best - gap * max(abs(self.best), 1e-12)
        )
        cert = certificate(self.best, best_dual, gap)
        if not math.isfinite(primal):
            return f"working-set step: dual {dual:.6e}; best so far: {cert}"
        own = relative_gap(primal, dual)
        if primal == self.best and abs(own - gap) <= 1e-9 * max(1.0, abs(gap)):
            return cert
        return f"this iterate: primal {primal:.6e}, dual {dual:.6e}; best so far: {cert}"

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


@contextmanager
def iteration_log(
    label: str, verbose: int, total: int | None = None, unit: str = "it"
) -> Iterator[IterationLog | None]:
    """The callback of a fit (None at ``verbose=0``: the engine then sends no records),
    its bar closed on exit."""
    if not verbose:
        yield None
        return
    log = IterationLog(label, verbose, total, unit)
    try:
        yield log
    finally:
        log.close()


def summary(
    label: str,
    *,
    primal: float,
    dual: float,
    gap: float,
    tol: float,
    n_iter: int,
    converged: bool,
    status: str,
    active: int,
    n_kernels: int,
    seconds: float | None,
    solvers: Sequence[tuple[str, int]] = (),
) -> None:
    """The summary record of one fit (or one binary problem of a multiclass fit);
    ``solvers``: the engine solvers that ran and the iterations of each."""
    ensure_handler()
    how = "converged" if converged else f"did not converge ({status})"
    when = "" if seconds is None else f", {seconds:.2f} s"
    sign = "≤" if gap <= tol else ">"
    ran = " then ".join(f"{name} {k}" for name, k in solvers)
    _logger.info(
        "%s: %s in %d iterations%s%s: %s %s tol %g, %d of %d kernels active",
        label, how, n_iter, f" ({ran})" if ran else "", when, certificate(primal, dual, gap),
        sign, tol, active, n_kernels,
    )  # fmt: skip
