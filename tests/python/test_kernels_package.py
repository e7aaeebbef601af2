"""``multikernel.kernels`` as a package (issue 32): the public names are the documented ones
and nothing else, the private names other modules import still resolve, importing it does not
import Dask, and ``_dask`` does not import it back (no import circle)."""

from __future__ import annotations

import ast
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np

import multikernel as mk
from multikernel import kernels

#: The public API of ``multikernel.kernels``, as it was when it was one module, and the
#: histogram kernels, distance kernels and sequence kernels added since.
PUBLIC = {
    "Spectrum",
    "WeightedDegree",
    "Callable",
    "Chi2",
    "DistanceKernels",
    "Hellinger",
    "Intersection",
    "Tanimoto",
    "from_distances",
    "FeatureBank",
    "FeatureMethod",
    "Gaussian",
    "Kernel",
    "KernelBank",
    "KernelSpec",
    "Laplacian",
    "Linear",
    "LowRankFactors",
    "Normalization",
    "PairwiseStack",
    "Polynomial",
    "SIMPLEMKL_WIDTHS",
    "StackTooLargeError",
    "alignment",
    "gram",
    "low_rank",
    "quad_forms",
    "shift_to_psd",
    "simplemkl_bank",
    "validate_stack",
    "view_bank",
}


def test_public_names_are_the_documented_ones() -> None:
    assert set(kernels.__all__) == PUBLIC
    assert len(kernels.__all__) == len(PUBLIC)
    # No helper import leaks into the public namespace.
    assert {n for n in dir(kernels) if not n.startswith("_")} == PUBLIC
    assert kernels.StackTooLargeError is mk.exceptions.StackTooLargeError
    assert kernels.KernelSpec is kernels.Kernel


def test_private_names_other_modules_import_still_resolve() -> None:
    from multikernel.kernels import _check_normalize, _from_tuple, _row_batches

    assert _check_normalize(None) == "none"
    assert _from_tuple(("linear", 0.0, 0.0, 0.0, None)) == kernels.Linear()
    assert _row_batches(10, 4, budget=12) == [slice(0, 3), slice(3, 6), slice(6, 9), slice(9, 10)]


def test_a_pickle_naming_the_package_loads() -> None:
    """Pickles written before the package name ``multikernel.kernels.<Class>``."""
    data = pickle.dumps(kernels.Gaussian(sigma=2.0, features=[1]), protocol=0)
    module = kernels.Gaussian.__module__.encode()
    old = data.replace(module + b"\n", b"multikernel.kernels\n")
    assert old != data
    assert pickle.loads(old) == kernels.Gaussian(sigma=2.0, features=[1])
    bank = kernels.KernelBank([kernels.Linear()], normalize="trace").fit(np.eye(3))
    again = pickle.loads(pickle.dumps(bank))
    assert np.array_equal(again.transform(np.eye(3)), bank.transform(np.eye(3)))


def test_importing_kernels_does_not_import_dask() -> None:
    code = (
        "import sys, multikernel.kernels\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_dask_module_does_not_import_kernels() -> None:
    """``kernels`` calls ``_dask`` through ``KernelBank._dask_job``; ``_dask`` takes what the
    job holds and returns results, so it imports nothing of ``kernels``, not even for typing."""
    import multikernel._dask as dask_module

    tree = ast.parse(Path(dask_module.__file__).read_text(encoding="utf-8"))
    imported = [
        node.module or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level > 0
    ]
    imported += [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    ]
    assert not [m for m in imported if m == "kernels" or m.startswith("kernels.")], imported
    assert "multikernel.kernels" not in imported


def test_banks_show_their_size_first_kernels_options_and_state() -> None:
    specs = mk.kernels.simplemkl_bank(3)
    bank = mk.kernels.KernelBank(specs, normalize="trace")
    head = ", ".join(repr(s) for s in specs[:3])
    assert repr(bank) == (
        f"KernelBank(108 kernels: [{head}, …], normalize='trace', center=False, dtype='float64')"
    )
    bank.fit(np.random.default_rng(0).normal(size=(7, 3)))
    assert repr(bank).endswith("dtype='float64'; fitted on 7 points)")
    one = mk.kernels.FeatureBank([mk.kernels.Gaussian(sigma=1.0)], n_components=4)
    assert repr(one) == (
        "FeatureBank(1 kernel: [Gaussian(sigma=1.0, features=None)], method='nystroem', "
        "n_components=4, normalize='mean_diag', dtype='float64')"
    )
    one.fit(np.random.default_rng(0).normal(size=(30, 2)))
    assert repr(one).endswith("; fitted, 4 features)")
