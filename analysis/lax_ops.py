"""lax_ops.py — the LaX crossing of one projection, forward and backward written out by hand.

These are the equations of docs/lax.md §3, in the order and GEMM shapes the C side will use,
on float64 torch tensors without autograd. analysis/lax_selftest.py checks them against
autograd of analysis/torch_model.py (which is written from the same document but as plain
forward code), so a C implementation that matches these functions matches the reference.

Row-vector form, N tokens, one projection of one layer l:

    P  [N, r]   x @ A                      (under BTP: after the bottleneck all-reduce)
    Zp [N, r]   the latent of the same projection in layer l-1 (None in layer 0)
    U  [N, r]   P + g(Zp)                  (layer 0: U = P)
    Uh [N, r]   LayerNorm(U) over r        (layer 0 or lax_norm = none: Uh = U)
    Z  [N, r]   σ(Uh)                      σ = SiLU (cola base) or identity (svd base)
    y           Z @ B                      (not here: the up factor is the base's)

Gates g(z): identity z; dense z @ W + b (W [r, r], b [r]); kron z @ (G1 ⊗ G2) with
G1 [r1, r1], G2 [r2, r2], r = r1·r2, computed per token on z viewed as Z [r1, r2] (row-major,
element (i, j) = z[i·r2 + j]) as G1ᵀ·Z·G2, by two GEMMs and two per-token transposes.
"""
import torch


def _t(x, a, b):
    """[N, a, b] -> [N, b, a] (a per-token transpose; a memory copy in C)."""
    return x.reshape(-1, a, b).transpose(1, 2).contiguous()


# ---- gates ---------------------------------------------------------------------------
def gate_forward(gate, Zp, w):
    """g(Zp) [N, r]. w: dict with W, b (dense) or G1, G2 (kron)."""
    if gate == "identity":
        return Zp.clone()
    if gate == "dense":
        return Zp @ w["W"] + w["b"]
    G1, G2 = w["G1"], w["G2"]
    r1, r2 = G1.shape[0], G2.shape[0]
    N = Zp.shape[0]
    T = Zp.reshape(N * r1, r2) @ G2                   # GEMM 1: [N·r1, r2] @ [r2, r2]
    Tt = _t(T, r1, r2).reshape(N * r2, r1)            # per token [r1, r2] -> [r2, r1]
    Ot = Tt @ G1                                       # GEMM 2: [N·r2, r1] @ [r1, r1] = (G1ᵀ T)ᵀ
    return _t(Ot, r2, r1).reshape(N, r1 * r2)         # back to [N, r1, r2] = [N, r]


def gate_backward(gate, dO, Zp, w):
    """Given dO = dL/dg(Zp) [N, r]: returns (dZp [N, r], {param: grad})."""
    if gate == "identity":
        return dO.clone(), {}
    if gate == "dense":
        return dO @ w["W"].t(), {"W": Zp.t() @ dO, "b": dO.sum(0)}
    G1, G2 = w["G1"], w["G2"]
    r1, r2 = G1.shape[0], G2.shape[0]
    N = Zp.shape[0]
    # recompute T = Z·G2 per token (forward GEMM 1); O = G1ᵀ T
    T = Zp.reshape(N * r1, r2) @ G2
    Tt = _t(T, r1, r2).reshape(N * r2, r1)            # Tᵀ per token
    dOt = _t(dO, r1, r2).reshape(N * r2, r1)          # dOᵀ per token
    dG1 = Tt.t() @ dOt                                 # Σ_n T[n] dO[n]ᵀ        [r1, r1]
    dTt = dOt @ G1.t()                                 # (G1 dO[n])ᵀ = dT[n]ᵀ   [N·r2, r1]
    dT = _t(dTt, r2, r1).reshape(N * r1, r2)           # dT[n] = G1 dO[n]
    dG2 = Zp.reshape(N * r1, r2).t() @ dT              # Σ_n Z[n]ᵀ dT[n]        [r2, r2]
    dZp = (dT @ G2.t()).reshape(N, r1 * r2)            # dZ[n] = dT[n] G2ᵀ
    return dZp, {"G1": dG1, "G2": dG2}


# ---- LayerNorm over r -----------------------------------------------------------------
def layernorm_forward(U, gamma, beta, eps):
    """Uh = (U - μ)·rstd ⊙ γ + β per token; μ = mean, var = mean((U-μ)²) (biased),
    rstd = 1/sqrt(var + eps). Returns Uh, μ [N], rstd [N]."""
    mu = U.mean(1)
    var = ((U - mu[:, None]) ** 2).mean(1)
    rstd = 1.0 / torch.sqrt(var + eps)
    xhat = (U - mu[:, None]) * rstd[:, None]
    return xhat * gamma + beta, mu, rstd


def layernorm_backward(dUh, U, mu, rstd, gamma):
    """Returns dU, dγ, dβ:  x̂ = (U-μ)·rstd, g = dUh ⊙ γ,
    dU = rstd·(g - mean_r(g) - x̂·mean_r(g ⊙ x̂)),  dγ = Σ_n dUh ⊙ x̂,  dβ = Σ_n dUh."""
    xhat = (U - mu[:, None]) * rstd[:, None]
    g = dUh * gamma
    dU = rstd[:, None] * (g - g.mean(1, keepdim=True) - xhat * (g * xhat).mean(1, keepdim=True))
    return dU, (dUh * xhat).sum(0), dUh.sum(0)


# ---- the latent activation -------------------------------------------------------------
def act_forward(base, Uh):
    return Uh * torch.sigmoid(Uh) if base == "cola" else Uh.clone()


def act_backward(base, dZ, Uh):
    if base != "cola":
        return dZ.clone()
    s = torch.sigmoid(Uh)
    return dZ * s * (1 + Uh * (1 - s))                 # SiLU'(x) = s (1 + x (1 - s))


# ---- one crossing ----------------------------------------------------------------------
def cross_forward(P, Zp, w, base, gate, norm, eps):
    """Z = σ(N(P + g(Zp))); Zp None = layer 0 (Z = σ(P)). Returns Z and the cache the
    backward needs (what a C implementation keeps, or recomputes from U and Zp)."""
    if Zp is None:
        U = P.clone()
        Uh, stats = U, None
    else:
        U = P + gate_forward(gate, Zp, w)
        if norm == "layernorm":
            Uh, mu, rstd = layernorm_forward(U, w["gamma"], w["beta"], eps)
            stats = (mu, rstd)
        else:
            Uh, stats = U, None
    return act_forward(base, Uh), (U, Uh, stats, Zp)


def cross_backward(dZ, cache, w, base, gate, norm):
    """dZ = the full gradient of the latent: Z's use by B (dy @ Bᵀ, after the bottleneck
    all-reduce under BTP) PLUS what the next layer's gate sent back (its dZp).
    Returns dP [N, r], dZp [N, r] or None (layer 0), {param: grad}."""
    U, Uh, stats, Zp = cache
    dUh = act_backward(base, dZ, Uh)
    if Zp is None:
        return dUh, None, {}
    grads = {}
    if norm == "layernorm":
        dU, grads["gamma"], grads["beta"] = layernorm_backward(dUh, U, stats[0], stats[1], w["gamma"])
    else:
        dU = dUh
    dZp, gg = gate_backward(gate, dU, Zp, w)
    grads.update(gg)
    return dU, dZp, grads                              # dP = dU: U = P + (terms without P)
