"""The exceptions multikernel raises.

Every error derives from :class:`MultikernelError`, and each specific error also derives from
the built-in exception users already catch: bad settings and bad data are ``ValueError``\\ s,
a stack too large for memory is a ``MemoryError``, a numerical failure is a
``numpy.linalg.LinAlgError`` (itself a ``ValueError``). Errors about one entry of one kernel
carry the kernel's index and the entry as attributes, so code can react without parsing the
message.

Examples
--------
>>> import numpy as np
>>> import multikernel as mk
>>> G = np.stack([np.eye(3), np.triu(np.ones((3, 3)))])
>>> try:
...     mk.kernels.validate_stack(G)
... except mk.exceptions.KernelNotSymmetricError as err:
...     print(err.kernel, err.entry, isinstance(err, ValueError))
1 (1, 0) True
"""

from __future__ import annotations

import numpy as np
import sklearn.exceptions

__all__ = [
    "InternalError",
    "InvalidInputError",
    "InvalidParameterError",
    "KernelNotPSDError",
    "KernelNotPSDWarning",
    "KernelNotSymmetricError",
    "MultikernelError",
    "NonFiniteError",
    "NotFittedError",
    "NumericalError",
    "StackTooLargeError",
]


class MultikernelError(Exception):
    """Base class of every error multikernel raises (``except MultikernelError`` catches them
    all).

    Examples
    --------
    >>> import multikernel as mk
    >>> try:
    ...     mk.MKLClassifier(C=-1.0).fit([[0.0], [1.0]], [0, 1])
    ... except mk.exceptions.MultikernelError as err:
    ...     print(type(err).__name__, err.parameter)
    InvalidParameterError C
    """


class InvalidParameterError(MultikernelError, ValueError):
    """A setting is outside its valid range or of the wrong kind.

    Parameters
    ----------
    message : str
        What is wrong and what is accepted.
    parameter : str, optional
        The name of the offending parameter (e.g. ``"C"``, ``"gamma_factor"``).

    Attributes
    ----------
    parameter : str or None

    Examples
    --------
    >>> import multikernel as mk
    >>> try:
    ...     mk.SpicyConfig(gamma_factor=0.5)
    ... except mk.exceptions.InvalidParameterError as err:
    ...     print(err.parameter)
    gamma_factor
    """

    def __init__(self, message: str, *, parameter: str | None = None) -> None:
        super().__init__(message)
        self.parameter = parameter


class InvalidInputError(MultikernelError, ValueError):
    """Input data that cannot be used: wrong shapes, non-finite values, kernels that are not
    symmetric or not positive semi-definite.

    Parameters
    ----------
    message : str
        What is wrong and what to do.
    kernel : int, optional
        Index of the offending kernel in the stack, when one is to blame.
    entry : tuple of int, optional
        The offending entry ``(i, j)`` of that kernel.

    Attributes
    ----------
    kernel : int or None
    entry : tuple of int or None

    Examples
    --------
    >>> import numpy as np
    >>> import multikernel as mk
    >>> try:
    ...     mk.kernels.gram(np.array([[np.nan]]), [mk.kernels.Linear()])
    ... except mk.exceptions.InvalidInputError as err:
    ...     print(isinstance(err, ValueError))
    True
    """

    def __init__(
        self,
        message: str,
        *,
        kernel: int | None = None,
        entry: tuple[int, int] | None = None,
    ) -> None:
        super().__init__(message)
        self.kernel = kernel
        self.entry = entry


class NotFittedError(MultikernelError, sklearn.exceptions.NotFittedError):  # type: ignore[misc]
    """A kernel or feature bank used before ``fit``: also scikit-learn's ``NotFittedError``
    (a ``ValueError`` and an ``AttributeError``), as the estimators raise before ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> import multikernel as mk
    >>> try:
    ...     mk.kernels.KernelBank([mk.kernels.Linear()]).transform(np.ones((2, 1)))
    ... except mk.exceptions.NotFittedError as err:
    ...     print(isinstance(err, ValueError))
    True
    """


class NonFiniteError(InvalidInputError):
    """Input (features, targets or a kernel) with NaN or infinite values.

    Examples
    --------
    >>> import numpy as np
    >>> import multikernel as mk
    >>> G = np.stack([np.eye(2), np.array([[1.0, np.inf], [np.inf, 1.0]])])
    >>> try:
    ...     mk.kernels.validate_stack(G)
    ... except mk.exceptions.NonFiniteError as err:
    ...     print(err.kernel)
    1
    """


class KernelNotSymmetricError(InvalidInputError):
    """A kernel matrix that is not symmetric; ``entry`` is its most asymmetric entry.

    Examples
    --------
    >>> import numpy as np
    >>> import multikernel as mk
    >>> try:
    ...     mk.kernels.validate_stack(np.array([[[1.0, 0.5], [0.0, 1.0]]]))
    ... except mk.exceptions.KernelNotSymmetricError as err:
    ...     print(err.kernel, err.entry)
    0 (1, 0)
    """


class KernelNotPSDError(InvalidInputError):
    """A kernel matrix that cannot be positive semi-definite (e.g. a negative diagonal entry,
    which ``entry`` names).

    Examples
    --------
    >>> import numpy as np
    >>> import multikernel as mk
    >>> try:
    ...     mk.kernels.validate_stack(np.array([[[1.0, 0.0], [0.0, -2.0]]]))
    ... except mk.exceptions.KernelNotPSDError as err:
    ...     print(err.kernel, err.entry)
    0 (1, 1)
    """


class KernelNotPSDWarning(RuntimeWarning):
    """A fit found a dual point ``ρ`` with ``ρᵀK_mρ < 0`` beyond the rounding of its
    computation: kernel ``m`` is not positive semi-definite as stored, weak duality does not
    hold, and the fit has no certificate (``dual_objective_`` is ``-inf``, ``converged_`` is
    ``False``). The usual cause is a float32 stack at large ``C``: rounding the entries to
    float32 leaves kernels slightly indefinite, and the dual exploits it. Use a float64 stack,
    or ``psd="clip"``, which shifts each training kernel by its smallest eigenvalue before the
    fit (:func:`multikernel.kernels.shift_to_psd`, docs/guide.md §6).

    A warning rather than an error: the model (the best primal iterate) is still returned.

    Examples
    --------
    >>> import multikernel as mk
    >>> issubclass(mk.exceptions.KernelNotPSDWarning, RuntimeWarning)
    True
    """


class StackTooLargeError(MultikernelError, MemoryError):
    """A kernel stack would not fit in the available memory; raised before anything is
    allocated. Use ``dtype=float32`` (half the memory), fewer kernels or fewer points.

    Examples
    --------
    >>> import multikernel as mk
    >>> issubclass(mk.exceptions.StackTooLargeError, MemoryError)
    True
    """


class NumericalError(MultikernelError, np.linalg.LinAlgError):
    """A numerical failure inside a solver (no finite iterate, a factorisation that failed
    even with a ridge). Rescaling the kernels (``normalize="mean_diag"``) or a smaller ``C``
    usually helps.

    Examples
    --------
    >>> import numpy as np
    >>> import multikernel as mk
    >>> issubclass(mk.exceptions.NumericalError, np.linalg.LinAlgError)
    True
    """


class InternalError(MultikernelError, RuntimeError):
    """A bug in multikernel: a panic of its engine (a Rust panic), turned into an ordinary
    exception so that ``except Exception`` catches it, or an internal invariant of the Python
    layer found broken (never a bare ``assert``, which ``python -O`` would skip). Please
    report it with the message.

    Examples
    --------
    >>> import multikernel as mk
    >>> issubclass(mk.exceptions.InternalError, RuntimeError)
    True
    """
