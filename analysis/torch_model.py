"""torch_model.py — the boost-c model, re-implemented independently in PyTorch.

Same maths as src/model/model.c (row-vector form, y = x @ W, W stored [d_in, d_out]):

    x = E[tokens]
    per layer:
        a = RMSNorm(x)                 (x / sqrt(mean(x^2) + eps) * gamma)
        q, k, v = lin_q(a), lin_k(a), lin_v(a);  q, k = RoPE(q), RoPE(k)
        y = causal_attention(q, k, v)  (scale 1/sqrt(hd); head h uses kv head h // (H/Hkv))
        x = x + lin_o(y)
        m = RMSNorm(x)
        z = (SiLU(g) or g) * u,  g, u = lin_gate(m), lin_up(m)
            (g*u only for cola with only_lr_act=1)
        x = x + lin_down(z)
    logits = RMSNorm(x) @ lm_head          (tied: @ embed_tokens^T)
    loss = mean token cross-entropy

    lin(x) = x @ W                         dense
           = SiLU(x @ A) @ B               cola
           = (x @ A) @ B                   svd
           = σ(N(x @ A + g(z_prev))) @ B   lax (docs/lax.md): latent crossing on a cola or svd
                                           base; z_prev = the latent σ(...) of the SAME projection
                                           in the previous layer (none in layer 0), g the gate
                                           (identity | dense z@W+b | kron z@(G1⊗G2)), N a LayerNorm
                                           over r (or none), σ = SiLU (cola base) or identity (svd)
    RoPE: non-interleaved halves, pair (i, i + hd/2), angle t * theta^(-2i/hd).

Parameters carry exactly the engine's names (= HDF5 paths): "model/embed_tokens",
"model/layers/<i>/input_norm", "model/layers/<i>/attn/q/A", "model/layers/<i>/mlp/down/W",
"model/final_norm", "model/lm_head", ... Use `model.param(name)` or
`model.named_engine_parameters()`; nn.Module names are the same with "/" -> "__".

Only the Debian stack is needed: /usr/bin/python3 with python3-torch, python3-numpy and
(for loading) python3-h5py.
"""
import json
import math
from dataclasses import dataclass, fields

import torch
import torch.nn.functional as F

LINEAR_KINDS = ("dense", "cola", "svd", "lax")
LAX_BASES = ("cola", "svd")                   # model.lax_base: the low-rank layer LaX crosses
LAX_GATES = ("identity", "dense", "kron")     # model.lax_gate: g(z_prev)
LAX_NORMS = ("layernorm", "none")             # model.lax_norm: N() after the crossing sum


@dataclass
class ModelConfig:
    linear: str = "cola"
    vocab_size: int = 32000
    n_layers: int = 8
    d_model: int = 512
    n_heads: int = 8
    n_kv_heads: int = 0          # 0 = n_heads
    d_ff: int = 1376
    rank_attn: int = 0           # 0 = d_model // 4
    rank_mlp: int = 0            # 0 = d_model // 4
    seq_len: int = 256
    tie_embeddings: bool = False
    only_lr_act: bool = False
    norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    embed_std: float = 0.02
    lax_base: str = "cola"       # LaX only (docs/lax.md); defaults = the authors' LaX-CoLA configs
    lax_gate: str = "kron"
    lax_norm: str = "layernorm"

    def __post_init__(self):
        if isinstance(self.linear, int):        # an enum value (0 dense, 1 cola, 2 svd, 3 lax)
            self.linear = LINEAR_KINDS[self.linear]
        self.linear = str(self.linear).lower()
        assert self.linear in LINEAR_KINDS, f"unknown linear kind {self.linear!r}"
        for name, kinds in (("lax_base", LAX_BASES), ("lax_gate", LAX_GATES), ("lax_norm", LAX_NORMS)):
            v = getattr(self, name)
            v = kinds[v] if isinstance(v, int) else str(v).lower()
            assert v in kinds, f"unknown {name} {v!r} (one of {', '.join(kinds)})"
            setattr(self, name, v)
        if not self.n_kv_heads:
            self.n_kv_heads = self.n_heads
        if not self.rank_attn:
            self.rank_attn = self.d_model // 4
        if not self.rank_mlp:
            self.rank_mlp = self.d_model // 4
        self.tie_embeddings = bool(self.tie_embeddings)
        self.only_lr_act = bool(self.only_lr_act)
        assert self.d_model % self.n_heads == 0 and self.n_heads % self.n_kv_heads == 0
        assert (self.d_model // self.n_heads) % 2 == 0, "head_dim must be even (RoPE)"

    @property
    def head_dim(self):
        return self.d_model // self.n_heads

    @property
    def kv_dim(self):
        return self.n_kv_heads * self.head_dim

    @property
    def latent_act(self):
        """True when the bottleneck has SiLU: cola, or lax on a cola base."""
        return self.linear == "cola" or (self.linear == "lax" and self.lax_base == "cola")

    @classmethod
    def from_dict(cls, d):
        """From the engine's JSON "model" section (unknown keys such as "preset" ignored)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


# The engine's presets (src/config/presets.c): vocab, layers, d, heads, kv heads, d_ff,
# rank_attn, rank_mlp, seq_len, tie_embeddings, only_lr_act. Keep in sync.
_PRESET_ROWS = {
    "cola-60m": (32000, 8, 512, 8, 8, 1376, 128, 128, 256, 0, 0),
    "cola-130m": (32000, 12, 768, 12, 12, 2048, 256, 256, 256, 0, 0),
    "cola-350m": (32000, 24, 1024, 16, 16, 2736, 256, 256, 256, 0, 1),
    "cola-1b": (32000, 24, 2048, 32, 32, 5461, 512, 512, 256, 0, 1),
    "cola-7b": (32000, 32, 4096, 32, 32, 11008, 1024, 1024, 256, 0, 1),
    "boost-1b": (32000, 24, 2048, 32, 32, 5472, 512, 512, 4096, 1, 1),
    "boost-3b": (32000, 28, 3072, 24, 24, 8192, 768, 768, 4096, 1, 1),
    "boost-7b": (32000, 32, 4096, 32, 32, 11008, 1024, 1024, 4096, 1, 1),
    "boost-13b": (32000, 40, 5120, 40, 40, 13824, 1280, 1280, 4096, 1, 1),
    "boost-30b": (32000, 36, 8192, 64, 64, 22016, 2048, 2048, 4096, 1, 1),
    "tiny": (512, 2, 64, 4, 2, 172, 16, 16, 32, 0, 1),
    "tiny-odd": (300, 3, 48, 3, 1, 70, 11, 7, 13, 0, 1),
}
_PRESET_KEYS = ("vocab_size", "n_layers", "d_model", "n_heads", "n_kv_heads", "d_ff", "rank_attn",
                "rank_mlp", "seq_len", "tie_embeddings", "only_lr_act")
PRESETS = {k: dict(zip(_PRESET_KEYS, v)) for k, v in _PRESET_ROWS.items()}


def linear_shapes(cfg):
    """(group, proj, d_in, d_out, rank) of the seven linears of a block."""
    d, kvd, ff = cfg.d_model, cfg.kv_dim, cfg.d_ff
    ra, rm = cfg.rank_attn, cfg.rank_mlp
    return [("attn", "q", d, d, ra), ("attn", "k", d, kvd, ra), ("attn", "v", d, kvd, ra),
            ("attn", "o", d, d, ra), ("mlp", "gate", d, ff, rm), ("mlp", "up", d, ff, rm),
            ("mlp", "down", ff, d, rm)]


def kron_factors(r):
    """(r1, r2) with r1 * r2 = r, r1 <= r2 and r2 - r1 smallest: r1 = the largest divisor of r
    not above sqrt(r) (the authors' most_balanced_factor_pair; a prime r gives (1, r))."""
    r1 = max(k for k in range(1, int(math.isqrt(r)) + 1) if r % k == 0)
    return r1, r // r1


def lax_specs(cfg, pre, r):
    """LaX tensors of one crossing (layers >= 1), in table order: gate, then norm.
    Init (the authors' code, docs/lax.md §4): dense W ~ N(0, 0.02), b = 0; kron factors
    U(-sqrt(6/S), sqrt(6/S)) for an S x S factor (kaiming_uniform); LayerNorm gamma = 1, beta = 0."""
    specs = []
    if cfg.lax_gate == "dense":
        specs.append((f"{pre}/lax_gate/W", (r, r), 0.02, True))
        specs.append((f"{pre}/lax_gate/b", (r,), "zeros", False))
    elif cfg.lax_gate == "kron":
        for name, s in zip(("G1", "G2"), kron_factors(r)):
            specs.append((f"{pre}/lax_gate/{name}", (s, s), ("uniform", math.sqrt(6.0 / s)), True))
    if cfg.lax_norm == "layernorm":
        specs.append((f"{pre}/lax_norm/gamma", (r,), None, False))
        specs.append((f"{pre}/lax_norm/beta", (r,), "zeros", False))
    return specs


def param_specs(cfg):
    """[(name, shape, init, decay)] in the engine's table order. init: a float = normal std,
    None = ones, "zeros", or ("uniform", bound) = U(-bound, bound)."""
    specs = [("model/embed_tokens", (cfg.vocab_size, cfg.d_model), cfg.embed_std, True)]
    for layer in range(cfg.n_layers):
        p = f"model/layers/{layer}"
        specs.append((f"{p}/input_norm", (cfg.d_model,), None, False))
        specs.append((f"{p}/post_attn_norm", (cfg.d_model,), None, False))
        for group, proj, din, dout, r in linear_shapes(cfg):
            pre = f"{p}/{group}/{proj}"
            if cfg.linear == "dense":
                specs.append((f"{pre}/W", (din, dout), 0.02, True))
            else:  # CoLA init: r^(-1/4) (d_in + d_out)^(-1/4) for A and B (cola, svd, lax)
                std = r ** -0.25 * (din + dout) ** -0.25
                specs.append((f"{pre}/A", (din, r), std, True))
                specs.append((f"{pre}/B", (r, dout), std, True))
                if cfg.linear == "lax" and layer > 0:   # layer 0 has no predecessor: no crossing
                    specs.extend(lax_specs(cfg, pre, r))
    specs.append(("model/final_norm", (cfg.d_model,), None, False))
    if not cfg.tie_embeddings:
        specs.append(("model/lm_head", (cfg.d_model, cfg.vocab_size), cfg.embed_std, True))
    return specs


def lax_gate_macs(cfg, r):
    """Multiply-adds per token of one gate g(z), z of width r: identity 0, dense r*r,
    kron r*(r1 + r2) (z as [r1, r2]: one [r1,r2]@[r2,r2] and one [r1,r1]^T@[r1,r2] product)."""
    if cfg.lax_gate == "dense":
        return r * r
    if cfg.lax_gate == "kron":
        r1, r2 = kron_factors(r)
        return r * (r1 + r2)
    return 0


def matmul_param_count(cfg):
    """Multiply-adds per token of all matrix products except attention (all linears + LM head;
    tied head counted). For dense/cola/svd this is the number of matmul weights; LaX adds its
    gates' MACs (L-1 crossings per projection; a kron gate has r1^2 + r2^2 weights but
    r (r1 + r2) MACs)."""
    n = cfg.d_model * cfg.vocab_size  # LM head (tied or not, it is a d x V product)
    for _, _, din, dout, r in linear_shapes(cfg):
        n += cfg.n_layers * (din * dout if cfg.linear == "dense" else r * (din + dout))
        if cfg.linear == "lax":
            n += (cfg.n_layers - 1) * lax_gate_macs(cfg, r)
    return n


def train_flops_per_token(cfg, T=None):
    """6 * matmul params + 12 * L * T * d (as config/model_train_flops_per_token)."""
    T = cfg.seq_len if T is None else T
    return 6.0 * matmul_param_count(cfg) + 12.0 * cfg.n_layers * T * cfg.d_model


def rmsnorm(x, gamma, eps):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * gamma


def rope_cos_sin(T, hd, theta, dtype, device=None):
    half = hd // 2
    inv = torch.tensor([theta ** (-2.0 * i / hd) for i in range(half)], dtype=torch.float64)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]          # [T, half]
    return ang.cos().to(dtype=dtype, device=device), ang.sin().to(dtype=dtype, device=device)


def rope(x, cos, sin):
    """x [B,T,H,hd]; non-interleaved halves."""
    half = x.shape[-1] // 2
    x0, x1 = x[..., :half], x[..., half:]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return torch.cat([x0 * c - x1 * s, x0 * s + x1 * c], dim=-1)


class BoostModel(torch.nn.Module):
    def __init__(self, cfg, dtype=torch.float32, seed=0, device=None):
        super().__init__()
        self.cfg = cfg
        # attention: the explicit softmax (the reference, any PyTorch), or, when a benchmark asks
        # for PyTorch's fastest attention, F.scaled_dot_product_attention (PyTorch >= 2.0)
        self.sdpa = False
        gen = torch.Generator().manual_seed(seed)
        self._names = []
        for name, shape, init, _ in param_specs(cfg):
            if init is None:
                t = torch.ones(shape, dtype=torch.float64)
            elif init == "zeros":
                t = torch.zeros(shape, dtype=torch.float64)
            elif isinstance(init, tuple):    # ("uniform", bound)
                t = (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) * init[1]
            else:
                t = torch.randn(shape, generator=gen, dtype=torch.float64) * init
            self.register_parameter(self._key(name), torch.nn.Parameter(t.to(dtype=dtype, device=device)))
            self._names.append(name)
        self._decay = {name: decay for name, _, _, decay in param_specs(cfg)}

    @staticmethod
    def _key(name):
        return name.replace("/", "__")

    def param(self, name):
        return getattr(self, self._key(name))

    def named_engine_parameters(self):
        return [(n, self.param(n)) for n in self._names]

    def decay_groups(self, weight_decay):
        """AdamW param groups as the engine: decay on 2-D matrices only."""
        dec = [p for n, p in self.named_engine_parameters() if self._decay[n]]
        nod = [p for n, p in self.named_engine_parameters() if not self._decay[n]]
        return [{"params": dec, "weight_decay": weight_decay}, {"params": nod, "weight_decay": 0.0}]

    # ---- loading -----------------------------------------------------------------
    @torch.no_grad()
    def load_hdf5(self, group, strict=True):
        """Copy weights from an h5py File/Group that holds "model/..." datasets (or is the
        "model" group itself). Shapes must match the engine's (1-D norms may be [1, d])."""
        # names are relative to the file root ("model/...") or to the "model" group itself
        strip = "model/embed_tokens" not in group and "embed_tokens" in group
        missing = []
        for name in self._names:
            key = name[len("model/"):] if strip else name
            if key not in group:
                missing.append(name)
                continue
            arr = torch.from_numpy(group[key][()])
            p = self.param(name)
            assert arr.numel() == p.numel(), f"{name}: HDF5 shape {tuple(arr.shape)} vs model {tuple(p.shape)}"
            p.copy_(arr.reshape(p.shape).to(p.dtype))
        if strict and missing:
            raise KeyError(f"missing in HDF5: {missing[:5]}{' ...' if len(missing) > 5 else ''}")
        return missing

    # ---- forward -------------------------------------------------------------------
    def linear(self, x, prefix, latents=None):
        """One linear. LaX: `latents` maps "attn/q" ... "mlp/down" to the previous layer's
        latent z of that projection; it is read (crossing) and replaced by this layer's z."""
        kind = self.cfg.linear
        if kind == "dense":
            return x @ self.param(prefix + "/W")
        h = x @ self.param(prefix + "/A")
        if kind == "lax":
            assert latents is not None, "lax: pass the dict of previous latents (forward() does)"
            key = prefix.split("/", 3)[3]                  # "model/layers/3/attn/q" -> "attn/q"
            if key in latents:                             # layer >= 1: cross with z_prev
                h = self.lax_cross(h, latents[key], prefix)
        if self.cfg.latent_act:
            h = F.silu(h)
        if kind == "lax":
            latents[key] = h
        return h @ self.param(prefix + "/B")

    def lax_gate(self, z, prefix):
        """g(z), z [..., r]: identity, dense z @ W + b, or kron z @ (G1 ⊗ G2) computed as
        G1^T · Z · G2 on z viewed as Z [r1, r2] (row-major, index = i*r2 + j)."""
        gate = self.cfg.lax_gate
        if gate == "identity":
            return z
        if gate == "dense":
            return z @ self.param(prefix + "/lax_gate/W") + self.param(prefix + "/lax_gate/b")
        g1, g2 = self.param(prefix + "/lax_gate/G1"), self.param(prefix + "/lax_gate/G2")
        zz = z.reshape(*z.shape[:-1], g1.shape[0], g2.shape[0])
        return (g1.t() @ zz @ g2).reshape(z.shape)

    def lax_cross(self, h, z_prev, prefix):
        """u = h + g(z_prev), then LayerNorm over r (biased variance, eps inside the sqrt)."""
        u = h + self.lax_gate(z_prev, prefix)
        if self.cfg.lax_norm == "none":
            return u
        mu = u.mean(-1, keepdim=True)
        var = ((u - mu) ** 2).mean(-1, keepdim=True)
        xhat = (u - mu) / torch.sqrt(var + self.cfg.norm_eps)
        return xhat * self.param(prefix + "/lax_norm/gamma") + self.param(prefix + "/lax_norm/beta")

    def attention(self, q, k, v):
        """q [B,T,H,hd], k,v [B,T,Hkv,hd] -> [B,T,H*hd], causal."""
        B, T, H, hd = q.shape
        rep = H // k.shape[2]
        if rep > 1:  # head h uses kv head h // rep
            k = k.repeat_interleave(rep, dim=2)
            v = v.repeat_interleave(rep, dim=2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))                 # [B,H,T,hd]
        if self.sdpa:  # PyTorch >= 2.0's fused kernel (flash attention on the CPU): benchmarks only
            y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            return y.transpose(1, 2).reshape(B, T, H * hd)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        mask = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
        s = s.masked_fill(mask, float("-inf"))
        y = torch.softmax(s, dim=-1) @ v                                  # [B,H,T,hd]
        return y.transpose(1, 2).reshape(B, T, H * hd)

    def forward(self, tokens):
        """tokens [B,T] int -> logits [B,T,V]."""
        c = self.cfg
        B, T = tokens.shape
        H, Hkv, hd = c.n_heads, c.n_kv_heads, c.head_dim
        emb = self.param("model/embed_tokens")
        cos, sin = rope_cos_sin(T, hd, c.rope_theta, emb.dtype, emb.device)
        x = emb[tokens.long()]
        gate_silu = not (c.latent_act and c.only_lr_act)
        lat = {}        # LaX: each projection's latent z of the previous layer
        for layer in range(c.n_layers):
            p = f"model/layers/{layer}"
            a = rmsnorm(x, self.param(p + "/input_norm"), c.norm_eps)
            q = rope(self.linear(a, p + "/attn/q", lat).view(B, T, H, hd), cos, sin)
            k = rope(self.linear(a, p + "/attn/k", lat).view(B, T, Hkv, hd), cos, sin)
            v = self.linear(a, p + "/attn/v", lat).view(B, T, Hkv, hd)
            x = x + self.linear(self.attention(q, k, v), p + "/attn/o", lat)
            m = rmsnorm(x, self.param(p + "/post_attn_norm"), c.norm_eps)
            g = self.linear(m, p + "/mlp/gate", lat)
            u = self.linear(m, p + "/mlp/up", lat)
            z = (F.silu(g) if gate_silu else g) * u
            x = x + self.linear(z, p + "/mlp/down", lat)
        xf = rmsnorm(x, self.param("model/final_norm"), c.norm_eps)
        if c.tie_embeddings:
            return xf @ emb.t()
        return xf @ self.param("model/lm_head")

    def loss(self, inputs, targets):
        logits = self.forward(inputs)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1).long())


def config_from_json(text):
    """ModelConfig from the engine's resolved-configuration JSON (whole or "model" section)."""
    d = json.loads(text) if isinstance(text, (str, bytes)) else text
    return ModelConfig.from_dict(d.get("model", d))


def load_model_hdf5(path_or_group, cfg=None, dtype=torch.float64):
    """Build a BoostModel from an HDF5 file or group written by the engine (weights under
    "model/..."; config JSON in the root attribute "config" when cfg is None)."""
    import h5py
    f = h5py.File(path_or_group, "r") if isinstance(path_or_group, str) else path_or_group
    try:
        if cfg is None:
            text = f.attrs["config"]
            cfg = config_from_json(text.decode() if isinstance(text, bytes) else text)
        m = BoostModel(cfg, dtype=dtype)
        m.load_hdf5(f)
        return m
    finally:
        if isinstance(path_or_group, str):
            f.close()
