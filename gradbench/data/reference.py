"""Writes the test inputs of the GradBench evals and their expected outputs.

The expected outputs come from JAX (float64, `jax.grad`), with each
function written here again from its eval's README, vectorised where that
is natural: an implementation and an AD system independent of linear-ad's.
The nested evals (`saddle`, `particle`) differentiate through their inner
loops by JAX's forward mode, which goes through `lax.while_loop` (its
reverse mode does not); all four of their functions have one answer.
`cargo test -p linear-ad-gradbench` compares the tool's answers with them.

Run from the repository root (needs `pip install "jax[cpu]"`):

    python3 gradbench/data/reference.py

Inputs are random with fixed seeds, drawn as GradBench's evals draw them
(uniform on [0, 1) unless noted), at sizes small enough for a test.
"""

import json
import math
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln

OUT = Path(__file__).parent


def lse(x):
    a = jnp.max(x)
    return a + jnp.log(jnp.sum(jnp.exp(x - a)))


def llsq(x, n):
    i = jnp.arange(n)
    t = -1.0 + i * 2.0 / (n - 1)
    s = jnp.sign(t)
    powers = t[:, None] ** jnp.arange(x.shape[0])[None, :]
    r = s - powers @ x
    return 0.5 * jnp.sum(r * r)


def det_by_minors(a):
    """Laplace expansion along the first row, recursively."""
    ell = a.shape[0]
    if ell == 1:
        return a[0, 0]
    total = 0.0
    for j in range(ell):
        minor = jnp.delete(jnp.delete(a, 0, axis=0), j, axis=1)
        total = total + (-1) ** j * a[0, j] * det_by_minors(minor)
    return total


def ode(x, s):
    n = x.shape[0]
    h = 2.0 / s

    def f(y):
        return jnp.concatenate([x[:1], x[1:] * y[:-1]])

    y = jnp.zeros(n)
    for _ in range(s):
        k1 = f(y)
        k2 = f(y + h * k1 / 2)
        k3 = f(y + h * k2 / 2)
        k4 = f(y + h * k3)
        y = y + h * (k1 + 2 * k2 + 2 * k3 + k4) / 6
    return y


def gmm(alpha, means, icf, x, gamma, m):
    n, d = x.shape
    k = alpha.shape[0]
    q = icf[:, :d]
    qdiag = jnp.exp(q)
    sum_q = jnp.sum(q, axis=1)
    # Strictly lower triangle, filled column by column.
    rows, cols = [], []
    for j in range(d):
        for r in range(j + 1, d):
            rows.append(r)
            cols.append(j)
    L = jnp.zeros((k, d, d)).at[:, rows, cols].set(icf[:, d:])
    Q = L + jax.vmap(jnp.diag)(qdiag)
    centred = x[:, None, :] - means[None, :, :]  # n k d
    qx = jnp.einsum("kab,nkb->nka", Q, centred)
    terms = alpha[None, :] + sum_q[None, :] - 0.5 * jnp.sum(qx * qx, axis=2)
    likelihood = jnp.sum(jax.scipy.special.logsumexp(terms, axis=1))
    lse_alpha = jax.scipy.special.logsumexp(alpha)
    frob = jnp.sum(qdiag**2, axis=1) + jnp.sum(icf[:, d:] ** 2, axis=1)
    prior = jnp.sum(0.5 * gamma * gamma * frob - m * sum_q)
    p = d + m + 1
    log_gamma_d = 0.25 * d * (d - 1) * math.log(math.pi) + sum(
        gammaln(0.5 * p + 0.5 * (1 - j)) for j in range(1, d + 1)
    )
    c = p * d * (math.log(gamma) - 0.5 * math.log(2)) - log_gamma_d
    constant = -n * d * 0.5 * math.log(2 * math.pi)
    return constant + likelihood - n * lse_alpha + prior - k * c


def lstm(main, extra, state, seq):
    """ADBench's LSTM loss, rows of `main` per layer: weights, biases."""
    l = main.shape[0] // 2
    b = extra.shape[1]
    sig = jax.nn.sigmoid
    hidden = [state[2 * j] for j in range(l)]
    cell = [state[2 * j + 1] for j in range(l)]
    total = 0.0
    for t in range(seq.shape[0] - 1):
        x = seq[t] * extra[0]
        for j in range(l):
            w, bias = main[2 * j].reshape(4, b), main[2 * j + 1].reshape(4, b)
            forget = sig(x * w[0] + bias[0])
            ingate = sig(hidden[j] * w[1] + bias[1])
            outgate = sig(x * w[2] + bias[2])
            change = jnp.tanh(hidden[j] * w[3] + bias[3])
            cell[j] = cell[j] * forget + ingate * change
            hidden[j] = outgate * jnp.tanh(cell[j])
            x = hidden[j]
        y = x * extra[1] + extra[2]
        lse = jnp.log(jnp.sum(jnp.exp(y)) + 2.0)
        total = total + jnp.sum(seq[t + 1] * (y - lse))
    return -total / ((seq.shape[0] - 1) * b)


def rodrigues(rot, pt, zero):
    """The rotation, with the branch ADBench takes at angle 0 (`zero`)."""
    if zero:
        return pt + jnp.cross(rot, pt)
    theta = jnp.sqrt(jnp.sum(rot**2))
    w = rot / theta
    tmp = jnp.dot(w, pt) * (1.0 - jnp.cos(theta))
    return pt * jnp.cos(theta) + jnp.cross(w, pt) * jnp.sin(theta) + w * tmp


def reproj(v, feat, zero):
    """One observation's residual of (cam, X, w) stacked as 15 numbers."""
    cam, x, w = v[:11], v[11:14], v[14]
    q = rodrigues(cam[:3], x - cam[3:6], zero)
    proj = q[:2] / q[2]
    rsq = jnp.sum(proj**2)
    proj = proj * (1.0 + cam[9] * rsq + cam[10] * rsq * rsq)
    return w * (proj * cam[6] + cam[7:9] - feat)


def hand(theta, us, model, corr, points):
    """ADBench's skinned hand, posed, before the global transform, as
    GradBench's C++ reference computes it."""
    parents, base_rel, inv_abs, base_pos, weights, tris, mirrored = model
    bones = len(parents)
    pose = jnp.zeros((bones + 3, 3))  # column c of the reference is row c
    pose = pose.at[0].set(theta[0:3]).at[1].set(1.0).at[2].set(theta[3:6])
    for f in range(5):
        t, c = 6 + 4 * f, 5 + 4 * f
        pose = pose.at[c, 0].set(theta[t]).at[c, 1].set(theta[t + 1])
        pose = pose.at[c + 1, 0].set(theta[t + 2]).at[c + 2, 0].set(theta[t + 3])

    def euler(xzy):
        tx, ty, tz = xzy[0], xzy[2], xzy[1]
        one, zero = jnp.ones(()), jnp.zeros(())
        rx = jnp.array([[one, zero, zero], [zero, jnp.cos(tx), -jnp.sin(tx)],
                        [zero, jnp.sin(tx), jnp.cos(tx)]])
        ry = jnp.array([[jnp.cos(ty), zero, jnp.sin(ty)], [zero, one, zero],
                        [-jnp.sin(ty), zero, jnp.cos(ty)]])
        rz = jnp.array([[jnp.cos(tz), -jnp.sin(tz), zero],
                        [jnp.sin(tz), jnp.cos(tz), zero], [zero, zero, one]])
        return rz @ ry @ rx

    absolutes = []
    for b in range(bones):
        tr = jnp.eye(4).at[:3, :3].set(euler(pose[b + 3]))
        rel = base_rel[b] @ tr
        absolutes.append(rel if parents[b] == -1 else absolutes[parents[b]] @ rel)
    positions = jnp.zeros((3, base_pos.shape[0]))
    for b in range(bones):
        moved = (absolutes[b] @ inv_abs[b]) @ base_pos.T
        positions = positions + moved[:3] * weights[:, b][None, :]
    if mirrored:
        positions = positions.at[0].multiply(-1.0)
    return positions, pose


def hand_objective(theta, us, model, corr, points, small_angle):
    """The residuals; `small_angle` is the branch the reference takes on
    the global rotation (decided on the concrete input)."""
    positions, pose = hand(theta, us, model, corr, points)
    aa = pose[0]
    norm = jnp.sqrt(jnp.sum(aa**2))
    if small_angle:
        r = jnp.eye(3)
    else:
        x, y, z = aa / norm
        s, c = jnp.sin(norm), jnp.cos(norm)
        r = jnp.array([
            [x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s],
            [x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s],
            [x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c],
        ])
    world = r @ positions + pose[2][:, None]
    tris = model[5]
    if us.shape[0] == 0:
        verts = world[:, corr]
    else:
        t = tris[corr]
        u0, u1 = us[:, 0], us[:, 1]
        verts = (u0[None, :] * world[:, t[:, 0]] + u1[None, :] * world[:, t[:, 1]]
                 + (1.0 - u0 - u1)[None, :] * world[:, t[:, 2]])
    return (points.T - verts).T.ravel()


def kmeans_cost(points, centroids):
    dist = jnp.sum((points[:, None, :] - centroids[None, :, :]) ** 2, axis=2)
    return jnp.sum(jnp.min(dist, axis=1))


def runs(inp):
    return inp | {"min_runs": 1, "min_seconds": 0}


def floats(a):
    return np.asarray(a, dtype=np.float64).tolist()


def cases_lse(rng):
    out = []
    for n, lo, hi in [(1, 0, 1), (50, 0, 1), (200, -100, 100)]:
        x = rng.uniform(lo, hi, n)
        inp = runs({"x": floats(x)})
        xj = jnp.array(x)
        out.append(("primal", inp, float(lse(xj))))
        out.append(("gradient", inp, floats(jax.grad(lse)(xj))))
    return out


def cases_llsq(rng):
    out = []
    for n, m in [(2, 1), (17, 4), (64, 8)]:
        x = rng.random(m)
        inp = runs({"x": floats(x), "n": n})
        xj = jnp.array(x)
        out.append(("primal", inp, float(llsq(xj, n))))
        out.append(("gradient", inp, floats(jax.grad(llsq)(xj, n))))
    return out


def cases_det(rng):
    out = []
    for ell in [1, 2, 4, 5]:
        a = rng.random(ell * ell)
        inp = runs({"A": floats(a), "ell": ell})
        f = lambda v: det_by_minors(v.reshape(ell, ell))
        aj = jnp.array(a)
        out.append(("primal", inp, float(f(aj))))
        out.append(("gradient", inp, floats(jax.grad(f)(aj))))
    return out


def cases_ode(rng):
    out = []
    for n, s in [(1, 1), (5, 3), (12, 10)]:
        x = rng.random(n)
        inp = runs({"x": floats(x), "s": s})
        xj = jnp.array(x)
        out.append(("primal", inp, floats(ode(xj, s))))
        out.append(("gradient", inp, floats(jax.grad(lambda v: ode(v, s)[-1])(xj))))
    return out


def cases_gmm(rng):
    out = []
    for d, k, n, m in [(2, 3, 5, 0), (3, 4, 10, 2)]:
        # As ADBench's generator: weights and means ~ N(0, 1) and U[0, 1),
        # icf ~ N(0, 1) scaled down, points U[0, 1); γ = 1.
        alpha = rng.normal(size=k)
        means = rng.random((k, d))
        icf = 0.5 * rng.normal(size=(k, d + d * (d - 1) // 2))
        x = rng.random((n, d))
        gamma = 1.0
        inp = runs(
            {
                "d": d,
                "k": k,
                "n": n,
                "alpha": floats(alpha),
                "means": floats(means),
                "icf": floats(icf),
                "x": floats(x),
                "gamma": gamma,
                "m": m,
            }
        )
        args = [jnp.array(v) for v in (alpha, means, icf)]
        obj = lambda a, mu, q: gmm(a, mu, q, jnp.array(x), gamma, m)
        grads = jax.grad(obj, argnums=(0, 1, 2))(*args)
        flat = np.concatenate([np.asarray(g).ravel() for g in grads])
        out.append(("objective", inp, float(obj(*args))))
        out.append(("jacobian", inp, floats(flat)))
    return out


def cases_lstm(rng):
    out = []
    for l, c, b in [(1, 2, 1), (2, 5, 3), (3, 12, 7)]:
        # As ADBench's generator: parameters and state U[0, 1), the
        # sequence the bits of characters.
        main = rng.random((2 * l, 4 * b))
        extra = rng.random((3, b))
        state = rng.random((2 * l, b))
        seq = rng.integers(0, 2, (c, b)).astype(np.float64)
        inp = runs(
            {
                "main_params": floats(main),
                "extra_params": floats(extra),
                "state": floats(state),
                "sequence": floats(seq),
            }
        )
        obj = lambda m, e: lstm(m, e, jnp.array(state), jnp.array(seq))
        args = [jnp.array(main), jnp.array(extra)]
        grads = jax.grad(obj, argnums=(0, 1))(*args)
        flat = np.concatenate([np.asarray(g).ravel() for g in grads])
        out.append(("objective", inp, float(obj(*args))))
        out.append(("jacobian", inp, floats(flat)))
    return out


def cases_ba(rng):
    out = []
    for n, m, p, rot_zero in [(2, 3, 10, False), (1, 1, 12, True), (3, 5, 20, False)]:
        # The camera and point U[0, 1), the point moved in front of the
        # camera; focal length in [100, 500).
        cam = rng.random(11)
        cam[6] = 100 + 400 * rng.random()
        if rot_zero:
            cam[:3] = 0.0
        x = rng.random(3) + np.array([0.0, 0.0, 5.0])
        w = rng.random()
        feat = rng.random(2)
        inp = runs(
            {"n": n, "m": m, "p": p, "cam": floats(cam), "x": floats(x),
             "w": w, "feat": floats(feat)}
        )
        v = jnp.array(np.concatenate([cam, x, [w]]))
        err = reproj(v, jnp.array(feat), rot_zero)
        objective = {
            "reproj_error": {"elements": floats(err), "repeated": p},
            "w_err": {"element": 1.0 - w * w, "repeated": p},
        }
        # Every observation sees the same camera and point, so every
        # block is this one; the columns are where the README puts them.
        block = np.asarray(jax.jacfwd(lambda u: reproj(u, jnp.array(feat), rot_zero))(v))
        rows, cols, vals = [0], [], []
        for i in range(p):
            c, pt = i % n, i % m
            for r in range(2):
                cols += [11 * c + k for k in range(11)]
                cols += [11 * n + 3 * pt + k for k in range(3)]
                cols += [11 * n + 3 * m + i]
                vals += list(block[r])
                rows.append(len(cols))
        for i in range(p):
            cols.append(11 * n + 3 * m + i)
            vals.append(-2.0 * w)
            rows.append(len(cols))
        short = lambda a: list(a[:30]) + [a[-1]]
        jacobian = {
            "rows": short(rows),
            "cols": short(cols),
            "vals": floats(short(vals)),
        }
        out.append(("objective", inp, objective))
        out.append(("jacobian", inp, jacobian))
    return out


def cases_ht(rng):
    out = []
    bones = 22
    for nv, ntri, n, complicated, mirrored, small in [
        (30, 0, 10, False, False, False),
        (24, 16, 8, True, False, False),
        (20, 12, 6, True, True, True),
    ]:
        parents = [-1] + [int(rng.integers(0, b)) for b in range(1, bones)]

        def transform():
            # A rotation (QR of a random matrix) and a translation.
            q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
            m = np.eye(4)
            m[:3, :3], m[:3, 3] = q, rng.normal(size=3)
            return m

        base_rel = np.array([transform() for _ in range(bones)])
        inv_abs = np.array([transform() for _ in range(bones)])
        base_pos = np.ones((nv, 4))
        base_pos[:, :3] = rng.normal(size=(nv, 3))
        weights = rng.random((nv, bones)) * (rng.random((nv, bones)) < 0.2)
        weights[:, 0] += 0.1
        weights /= weights.sum(axis=1, keepdims=True)
        tris = rng.integers(0, nv, (max(ntri, 1), 3))
        corr = rng.integers(0, ntri if complicated else nv, n)
        points = rng.normal(size=(n, 3))
        theta = 0.5 * rng.normal(size=26)
        if small:
            theta[0:3] = 1e-5
        us = rng.random((n, 2)) * 0.5 if complicated else np.zeros((0, 2))
        model_in = {
            "bone_count": bones,
            "bone_names": [f"bone{b}" for b in range(bones)],
            "parents": parents,
            "base_relatives": floats(base_rel),
            "inverse_base_absolutes": floats(inv_abs),
            "base_positions": floats(base_pos),
            "weights": floats(weights),
            "triangles": tris.tolist(),
            "is_mirrored": mirrored,
        }
        inp = runs(
            {
                "theta": floats(theta),
                "data": {"model": model_in, "correspondences": corr.tolist(),
                         "points": floats(points)},
                "us": floats(us) if complicated else [],
            }
        )
        model = (parents, jnp.array(base_rel), jnp.array(inv_abs),
                 jnp.array(base_pos), jnp.array(weights), tris, mirrored)
        f = lambda t, u: hand_objective(t, u, model, corr, jnp.array(points), small)
        tj, uj = jnp.array(theta), jnp.array(us)
        jt = np.asarray(jax.jacfwd(f, argnums=0)(tj, uj))
        columns = [jt]
        if complicated:
            ju = np.asarray(jax.jacfwd(f, argnums=1)(tj, uj)).reshape(3 * n, n, 2)
            # Residual row 3i + k depends on point i's pair only.
            block = np.array([ju[r, r // 3] for r in range(3 * n)])
            columns = [block, jt]
        out.append(("objective", inp, floats(f(tj, uj))))
        out.append(("jacobian", inp, floats(np.concatenate(columns, axis=1))))
    return out


def cases_kmeans(rng):
    out = []
    for n, k, d in [(4, 1, 1), (30, 3, 2), (100, 5, 4)]:
        # Every centroid is the closest to at least one point (the README
        # guarantees it: the Hessian is then invertible): each point is a
        # centroid plus a small offset, every centroid used.
        centroids = rng.uniform(-5, 5, (k, d))
        owner = np.concatenate([np.arange(k), rng.integers(0, k, n - k)])
        points = centroids[owner] + rng.normal(0, 0.3, (n, d))
        inp = runs({"points": floats(points), "centroids": floats(centroids)})
        pj, cj = jnp.array(points), jnp.array(centroids)
        cost = lambda c: kmeans_cost(pj, c)
        grad = jax.grad(cost)(cj)
        diag = jnp.diag(jax.hessian(cost)(cj).reshape(k * d, k * d)).reshape(k, d)
        out.append(("cost", inp, float(cost(cj))))
        out.append(("dir", inp, floats(grad / diag)))
    return out


def argmin(f, grad, x):
    """GradBench's gradient-descent solver, as a Python loop (the outer
    optimisations: plain iteration on jitted derivatives)."""
    fx, gx = f(x), grad(x)
    eta, i = 1e-5, 0
    while True:
        if jnp.sqrt(jnp.sum(gx * gx)) <= 1e-5:
            return x
        if i == 10:
            eta, i = 2.0 * eta, 0
            continue
        xp = x - eta * gx
        if jnp.sqrt(jnp.sum((xp - x) ** 2)) <= 1e-5:
            return x
        fxp = f(xp)
        if fxp < fx:
            x, fx, gx, i = xp, fxp, grad(xp), i + 1
        else:
            eta, i = eta / 2.0, 0


def argmin_traced(f, grad, x):
    """The same solver as a `lax.while_loop` (the inner optimisation,
    which the outer derivative differentiates: JAX's forward mode goes
    through a while loop, its reverse mode does not)."""
    mag = lambda v: jnp.sqrt(jnp.sum(v * v))

    def step(s):
        x, fx, gx, eta, i, _ = s

        def move(_):
            xp = x - eta * gx

            def descend(_):
                fxp = f(xp)
                return jax.lax.cond(
                    fxp < fx,
                    lambda _: (xp, fxp, grad(xp), eta, i + 1, True),
                    lambda _: (x, fx, gx, eta / 2.0, 0, True),
                    None,
                )

            return jax.lax.cond(
                mag(xp - x) <= 1e-5,
                lambda _: (x, fx, gx, eta, i, False),
                descend,
                None,
            )

        return jax.lax.cond(
            mag(gx) <= 1e-5,
            lambda _: (x, fx, gx, eta, i, False),
            lambda _: jax.lax.cond(
                i == 10, lambda _: (x, fx, gx, 2.0 * eta, 0, True), move, None
            ),
            None,
        )

    init = (x, f(x), grad(x), jnp.float64(1e-5), 0, True)
    return jax.lax.while_loop(lambda s: s[5], step, init)[0]


def forward_gradient(f):
    """∇f by forward mode, one `jax.jvp` per unit vector, jitted."""

    @jax.jit
    def g(x):
        eye = jnp.eye(x.shape[0])
        return jnp.stack([jax.jvp(f, (x,), (eye[k],))[1] for k in range(x.shape[0])])

    return g


def saddle_f(p1, p):
    return (p1[0] ** 2 + p1[1] ** 2) - (p[0] ** 2 + p[1] ** 2)


def saddle(start):
    """Nested AD by JAX: forward mode through the inner `argmax`, whose own
    gradient is `jax.grad`."""

    def r1(p1):
        inner = lambda p: -saddle_f(p1, p)
        return saddle_f(p1, argmin_traced(inner, jax.grad(inner), start))

    x = argmin(jax.jit(r1), forward_gradient(r1), start)
    outer = lambda p: -saddle_f(x, p)
    y = argmin(outer, jax.grad(outer), start)
    return jnp.concatenate([x, y])


def particle(w0):
    """Nested AD by JAX: forward mode through Euler's method, each step's
    force the inner `jax.grad` of the potential."""

    def potential(x, w):
        charges = [jnp.array([10.0, 10.0 - w]), jnp.array([10.0, 0.0])]
        return sum(1.0 / jnp.sqrt(jnp.sum((x - c) ** 2)) for c in charges)

    force = jax.grad(potential)

    def naive_euler(w):
        w = w[0]

        def step(s):
            x, xdot, _ = s
            x_new = x + 0.1 * xdot
            return jax.lax.cond(
                x_new[1] > 0.0,
                lambda _: (x_new, xdot - 0.1 * force(x, w), True),
                lambda _: (x, xdot, False),
                None,
            )

        init = (jnp.array([0.0, 8.0]), jnp.array([0.75, 0.0]), True)
        x, xdot, _ = jax.lax.while_loop(lambda s: s[2], step, init)
        x_t_f = x + (-x[1] / xdot[1]) * xdot
        return x_t_f[0] ** 2

    return argmin(jax.jit(naive_euler), forward_gradient(naive_euler), jnp.array([w0]))[0]

def cases_saddle(rng):
    out = []
    starts = [np.array([1.0, 1.0])] + [rng.uniform(-2, 2, 2) for _ in range(2)]
    for start in starts:
        inp = runs({"start": floats(start)})
        expected = floats(saddle(jnp.array(start)))
        for mode in ["ff", "fr", "rf", "rr"]:
            out.append((mode, inp, expected))
    return out


def cases_particle(rng):
    out = []
    for w0 in [0.0] + list(rng.uniform(-0.5, 0.5, 2)):
        inp = runs({"w": float(w0)})
        expected = float(particle(w0))
        for mode in ["ff", "fr", "rf", "rr"]:
            out.append((mode, inp, expected))
    return out


def main():
    # A fixed seed per eval, so that adding one leaves the others' data be.
    evals = {
        "det": (0, cases_det),
        "gmm": (1, cases_gmm),
        "llsq": (2, cases_llsq),
        "lse": (3, cases_lse),
        "ode": (4, cases_ode),
        "lstm": (5, cases_lstm),
        "ba": (6, cases_ba),
        "ht": (7, cases_ht),
        "kmeans": (8, cases_kmeans),
        "saddle": (9, cases_saddle),
        "particle": (10, cases_particle),
    }
    for name, (seed, make) in evals.items():
        rng = np.random.default_rng(31337 + seed)
        cases = [
            {"function": f, "input": inp, "expected": exp}
            for f, inp, exp in make(rng)
        ]
        path = OUT / f"{name}.json"
        path.write_text(json.dumps(cases, indent=1) + "\n")
        print(f"{path}: {len(cases)} cases")


if __name__ == "__main__":
    main()
