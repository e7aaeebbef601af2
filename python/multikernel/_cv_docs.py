"""The documentation the CV estimators :class:`~multikernel.MKLClassifierCV` and
:class:`~multikernel.MKLRegressorCV` share (their docstrings are assembled from it)."""

from __future__ import annotations

__all__ = ["ATTRS_DOC", "GRID_DOC", "INPUTS_DOC", "params_doc"]

_PARAMS_HEAD = """
    Parameters
    ----------
    kernels : sequence of Kernel, FeatureBank, "precomputed" or None, default None
        Kernel specifications evaluated on ``X``; a
        :class:`multikernel.kernels.FeatureBank` (explicit features, ``K_m = Φ_m Φ_mᵀ``):
        every fold fits a copy of it on its training rows only, so the held-out rows take no
        part in the features its path is computed on, and the refit is
        :class:`MKLClassifier`/:class:`MKLRegressor` with the same ``kernels=FeatureBank``,
        fitted on all of ``X`` (``kernel_bank_``; ``predict`` takes raw points);
        "precomputed": ``X`` is an ``(M, n, n)`` stack (and ``(M, n_test, n)`` at predict
        time; either also as a :class:`multikernel.kernels.PairwiseStack`), or low-rank
        factors (:class:`multikernel.kernels.LowRankFactors`; ``predict`` then takes the
        ``(M, n_test, n)`` cross kernels, or a list of the test points' factor rows
        ``(n_test, r_m)``); None: :func:`multikernel.default_kernels` (or, for
        factors, as "precomputed").
    Cs : int or sequence of float, default 20
        The candidate ``C``: that many values spread geometrically from the smallest ``C0``
        of the folds' paths to their largest end (``1000·C0``) (a grid of fits: from the
        smallest ``C`` at which a kernel enters the fit of all the data to 1000 times it, see
        docs/guide.md §10), or the values given.
    cv : int, cross-validation generator or iterable, default 5
        As in scikit-learn (stratified folds for the classifier).
    scoring : str, callable or None, default None
        A scikit-learn scorer; None: accuracy (classifier) or R² (regressor).
"""

_PARAMS_TAIL = """    mu : float or None, default None
        A fixed barrier weight of the fold paths instead of one that follows ``tol`` (see
        :func:`multikernel.mkl_path`).
    normalize : {"mean_diag", "trace", "multiplicative", "spherical", "none"} or None
        Scaling of kernels evaluated from specs (a FeatureBank has its own).
    psd : {"check", "clip"}, default "check"
        ``"clip"``: each training stack (every fold's, and the refit's) is shifted to
        positive semi-definite kernels first (:func:`multikernel.kernels.shift_to_psd`);
        the refit's shifts are ``psd_shifts_``, each fold path's its ``psd_shifts``.
        Feature blocks and low-rank factors are PSD and left as they are.
    tol : float, default 1e-3
        Relative duality gap promised at every point of the fold paths (as
        :func:`multikernel.mkl_path`) and by the refit.
    max_iter : int, default 1000
        Iteration budget of the refit (and of each fit of a grid).
    n_threads : int, default 0
        Threads of the engine, as scikit-learn's ``n_jobs``: -1 (or 0) all cores, or
        ``OMP_NUM_THREADS`` when that is set (joblib's workers set it to their share); ``-k`` all
        but ``k − 1``; ``k > 0`` that many, clipped to the available cores.
    verbose : int, default 0
        ``0``: silent. ``1``: the refit's iteration and summary lines, then one summary line
        of the CV fit (chosen ``C``, its mean held-out score, how the refit ended) on the
        ``multikernel`` logger, and for a grid of fits the candidates' range first; the
        folds' paths and fits log nothing. ``2`` or more: also progress
        bars over the folds' paths and the held-out scores (folds × candidates), and the
        refit's iterations as a bar instead of lines (tqdm, the ``progress`` extra; without
        it, as ``1``).
"""


def params_doc(own: str) -> str:
    """The Parameters section: the shared ones, with ``own`` (the class's, in the order of
    its signature) after ``scoring``."""
    return _PARAMS_HEAD + own + _PARAMS_TAIL


GRID_DOC = """
    The path follows the default loss only, one-vs-rest, without class weights. Any other
    ``loss``, ``multi_class`` or ``class_weight`` (every one the estimator takes) makes each
    fold fit a grid instead: the fold's kernels (or feature blocks) are computed once, and
    :class:`{estimator}` with ``penalty="l1"`` and the same parameters is fitted on them at
    every candidate ``C`` in ascending order, each scored on the fold's held-out cross kernels;
    the fits follow the grid warm when their solver takes a start (docs/guide.md §10).
"""


INPUTS_DOC = """
    With ``kernels=FeatureBank(...)`` every fold fits a copy of the bank on its training rows
    only (honest CV) and follows the path on those feature blocks (``R × R`` Newton systems
    when their total width ``R`` is below the fold's ``n``); the refit fits the bank on all of
    ``X``. On :class:`multikernel.kernels.LowRankFactors` (``kernels="precomputed"``) every
    fold's path reads the factors' training rows, and the refit reads the factors as feature
    blocks: no ``n × n`` kernel is formed. Its predictions take the dense cross kernels
    ``(M, n_test, n)`` (as after a precomputed stack) or the test points' factor rows.
"""

ATTRS_DOC = """
    Attributes
    ----------
    C_ : float
        The chosen ``C``: the best mean held-out score. Folds where the score is NaN at
        every candidate (the scoring undefined there, e.g. R² on one held-out point) are
        left out of the mean, and a candidate with a NaN score on another fold is not
        chosen; ``fit`` raises when no candidate is left.
    Cs_ : ndarray of shape (n_Cs,)
        The candidates.
    scores_ : ndarray of shape (n_folds, n_Cs)
        Held-out score of every fold at every candidate.
    paths_ : list of list of MKLPath, or None
        Per fold, its path (one per class, one-vs-rest, for more than two classes); with a
        FeatureBank, each path's ``kernel_bank`` is the copy fitted on its fold's training
        rows. None when the folds fit a grid (a loss, scheme or ``class_weight`` the path
        does not follow).
    estimator_ : {estimator}
        The refit at ``C_`` (``penalty="l1"``); its fitted attributes (``dual_coef_``,
        ``kernel_weights_``, ``duality_gap_``, …) are also set on this estimator.
"""
