"""Kernel specifications, Gram stacks and their normalisation.

A kernel specification is a frozen dataclass naming a kernel function and, optionally, the
feature columns it reads; each derives from :class:`Kernel` (:class:`Linear`,
:class:`Polynomial`, :class:`Gaussian`, :class:`Laplacian`, the histogram and set kernels
:class:`Chi2`, :class:`Intersection`, :class:`Hellinger` and :class:`Tanimoto`, the sequence
kernels :class:`Spectrum` and :class:`WeightedDegree` (on a 1-D array of strings or the string
columns of a DataFrame), and :class:`Callable` for any function of two feature matrices).
:func:`gram` computes the stack of training Gram matrices ``(M, n, n)``; :class:`KernelBank`
keeps the training statistics so that :meth:`KernelBank.transform` gives cross kernels
``(M, n_new, n)`` normalised the same way.
All heavy work runs in Rust, in parallel, with the GIL released (taken back only to call a
:class:`Callable`'s function on a block of rows).

Examples
--------
>>> import numpy as np
>>> import multikernel as mk
>>> X = np.random.default_rng(0).normal(size=(20, 3))
>>> specs = [mk.kernels.Gaussian(sigma=1.0), mk.kernels.Polynomial(degree=2, features=[0])]
>>> G = mk.kernels.gram(X, specs, normalize="trace")
>>> G.shape, round(float(np.trace(G[0])), 12)
((2, 20, 20), 1.0)
"""

# The public names live in modules by idea (_specs, _banks, _feature_maps, _stacks); the
# private ones re-exported below are those other modules and the tests import from here.
from .._pairwise import PairwiseStack
from .._typing import Normalization
from ..exceptions import StackTooLargeError
from ._banks import SIMPLEMKL_WIDTHS, KernelBank, simplemkl_bank, view_bank
from ._banks import _check_normalize as _check_normalize
from ._banks import _from_tuple as _from_tuple
from ._distances import DistanceKernels, from_distances
from ._feature_maps import FeatureBank, FeatureMethod
from ._feature_maps import _row_batches as _row_batches
from ._histogram import Chi2, Hellinger, Intersection, Tanimoto
from ._sequence import Spectrum, WeightedDegree
from ._specs import (
    Callable,
    Gaussian,
    Kernel,
    KernelSpec,
    Laplacian,
    Linear,
    Polynomial,
)
from ._stacks import (
    LowRankFactors,
    alignment,
    gram,
    low_rank,
    quad_forms,
    shift_to_psd,
    validate_stack,
)

__all__ = [
    "Callable",
    "Chi2",
    "DistanceKernels",
    "FeatureBank",
    "FeatureMethod",
    "Gaussian",
    "Hellinger",
    "Intersection",
    "Kernel",
    "KernelBank",
    "KernelSpec",
    "Laplacian",
    "Linear",
    "LowRankFactors",
    "Normalization",
    "PairwiseStack",
    "Polynomial",
    "Spectrum",
    "SIMPLEMKL_WIDTHS",
    "StackTooLargeError",
    "Tanimoto",
    "WeightedDegree",
    "alignment",
    "from_distances",
    "gram",
    "low_rank",
    "quad_forms",
    "shift_to_psd",
    "simplemkl_bank",
    "validate_stack",
    "view_bank",
]
