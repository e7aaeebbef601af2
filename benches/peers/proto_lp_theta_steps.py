"""Numpy prototype: how many θ iterations lp-MKL (p = 2, hinge) needs on the SimpleMKL UCI bank
(issue "MKL at the price of three SVMs"): Kloft's plain update (eq. 17), the ω-extrapolated
update the engine uses (docs/mathematics.md §3.3 (c)), and a Newton step on the fixed-point
equation ``log T(θ) = log θ`` with the free-support-vector Hessian (HessianMKL's). Each iteration
solves the SVM on ``K_θ`` exactly (scikit-learn's SVC, tol 1e-6); the count is the first
iteration with ``|J(θ) − J*| ≤ tol·J*``, ``J`` the SVM's dual optimum on ``K_θ`` and ``J*`` that
of 40 extrapolated iterations. It reads the repository's ``tests/data`` (and scikit-learn's
breast cancer).

    python benches/peers/proto_lp_theta_steps.py liver_bupa,pima,sonar 0.1,1,10
"""

import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _peers_case import breast_cancer_problem, uci_problem
from sklearn.svm import SVC

warnings.simplefilter("ignore")


def svm(K, y, C):
    s = SVC(kernel="precomputed", C=C, tol=1e-6).fit(K, y)
    beta = np.zeros(len(y))
    beta[s.support_] = s.dual_coef_[0]  # y_i alpha_i
    alpha = np.abs(beta)
    J = alpha.sum() - 0.5 * beta @ K @ beta
    return beta, J, -s.intercept_[0]


def forms(G, beta):
    Kb = np.einsum("mij,j->mi", G, beta)  # (M, n)
    return Kb, Kb @ beta


def T(theta, q, p):
    w = theta**2 * q  # ||w_m||^2 = theta_m^2 q_m
    t = np.maximum(w, 0) ** (1.0 / (p + 1))
    return t / np.linalg.norm(t, p)


def run(G, y, C, p, mode, maxit=60, Jstar=None, tol=1e-3):
    M = G.shape[0]
    theta = np.full(M, M ** (-1 / p))
    its = []
    for it in range(1, maxit + 1):
        K = np.tensordot(theta, G, 1)
        beta, J, b = svm(K, y, C)
        its.append(J)
        if Jstar is not None and abs(J - Jstar) <= tol * abs(Jstar):
            return it, J
        Kb, q = forms(G, beta)
        nxt = T(theta, q, p)
        if mode == "plain":
            theta = nxt
        elif mode == "omega":
            om = p / (p - 1)
            a = np.where(
                (theta > 0) & (nxt > 0), theta * (nxt / np.where(theta > 0, theta, 1.0)) ** om, nxt
            )
            theta = a / np.linalg.norm(a, p)
        else:  # newton on log-space fixed point F(u) = log T(e^u) - u
            alpha = np.abs(beta)
            F = np.flatnonzero((alpha > 1e-8 * C) & (alpha < C * (1 - 1e-8)))
            u = np.log(theta)
            # dq_m/dtheta_b = -2 H_mb, H = g_F^T Z g_F, g_m = K_m beta, Z bordered inverse on K_FF
            if len(F):
                KF = K[np.ix_(F, F)] + 1e-10 * np.eye(len(F))
                A = np.block([[KF, np.ones((len(F), 1))], [np.ones((1, len(F))), np.zeros((1, 1))]])
                g = Kb[:, F]  # (M, |F|)
                X = np.linalg.solve(A, np.vstack([g.T, np.zeros((1, M))]))[: len(F)]
                H = g @ X
            else:
                H = np.zeros((M, M))
            dq_du = -2 * H * theta[None, :]  # dq_m / du_b
            # log t_m = (2 u_m + log q_m)/(p+1), then the normalisation to unit p-norm
            safe = np.maximum(q, 1e-300)
            Jl = (2 * np.eye(M) + dq_du / safe[:, None]) / (p + 1)
            tn = nxt
            wts = tn**p / np.sum(tn**p)  # d log||t||_p / d log t
            Jl = Jl - np.outer(np.ones(M), wts) @ Jl
            Fv = np.log(np.maximum(nxt, 1e-300)) - u
            d = np.linalg.lstsq(np.eye(M) - Jl, Fv, rcond=None)[0]
            un = u + d
            th = np.exp(un)
            ok = bool(np.all(np.isfinite(th))) and th.max() > 0
            theta = th / np.linalg.norm(th, p) if ok else nxt  # a failed step: the plain one
    return maxit, its[-1]


for name in sys.argv[1].split(","):
    P = breast_cancer_problem() if name == "breast" else uci_problem(name)
    G, y = P.Gtr, P.ytr
    for C in [float(c) for c in sys.argv[2].split(",")]:
        p = 2.0
        _, Jstar = run(G, y, C, p, "omega", maxit=40)
        row = [f"{name} C={C:g}"]
        for mode in ("plain", "omega", "newton"):
            it, J = run(G, y, C, p, mode, Jstar=Jstar)
            row.append(f"{mode} {it}")
        print("  ".join(row), flush=True)
