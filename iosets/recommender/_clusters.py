"""The data-driven mapping: a Gaussian mixture of log10 w_iter, turned into set boundaries."""

import numpy as np

from .._validation import check_count


def fit_clusters(log_w, *, max_sets: int = 8, random_state: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boundaries of the Gaussian mixture of ``log_w`` (log10 w_iter) whose number of components minimises BIC.

    Sets are numbered 0, 1, ... by increasing component mean, over the components that
    hold at least one job. Returns ``(cuts, labels, priority_of)``: the set of a w_iter
    is ``labels[searchsorted(cuts, log10 w_iter)]`` (cuts ascending, in log10 s; the
    most probable component changes there), and ``priority_of[s]`` is
    10 ** -(mean log10 w_iter of set s), so that a cluster centred on a power of ten
    gets SET-10's priority.
    """
    from sklearn.mixture import GaussianMixture  # imported on use: ~1 s

    max_sets = check_count(max_sets, "max_sets", minimum=1)
    x = np.asarray(log_w, dtype=np.float64).reshape(-1, 1)
    if x.shape[0] == 0:
        return np.empty(0), np.zeros(1, np.int64), np.empty(0)
    if x.shape[0] == 1:  # a mixture is fitted on two points at least: one job is one set, centred on it
        return np.empty(0), np.zeros(1, np.int64), np.power(10.0, -x[0])
    models = [
        GaussianMixture(n_components=k, random_state=random_state, reg_covar=1e-4).fit(x)
        for k in range(1, min(max_sets, np.unique(x).size) + 1)
    ]
    best = min(models, key=lambda model: model.bic(x))  # the fewest components among equal BICs
    used = np.unique(best.predict(x))
    order = used[np.argsort(best.means_[used, 0])]
    means = best.means_[order, 0]
    cuts, labels = decision_cuts(means, np.sqrt(best.covariances_[order, 0, 0]), np.log(best.weights_[order]))
    with np.errstate(over="ignore"):  # inf for a w_iter near 1e-308 s: the mapping's priority check names it
        return cuts, labels, np.power(10.0, -means)


def decision_cuts(means, sds, log_weights) -> tuple[np.ndarray, np.ndarray]:
    """Where the most probable of some weighted 1-D normals changes: ``(cuts, labels)``.

    Component ``labels[i]`` is the most probable between ``cuts[i - 1]`` and
    ``cuts[i]`` (``labels`` has one more entry than ``cuts``). Two weighted log
    densities differ by a quadratic, so every change of winner is one of its roots.

    Examples
    --------
    >>> cuts, labels = decision_cuts(np.array([0.0, 2.0]), np.array([0.5, 0.5]), np.log([0.5, 0.5]))
    >>> cuts.tolist(), labels.tolist()
    ([1.0], [0, 1])
    """
    means, sds, log_weights = (np.asarray(v, dtype=np.float64) for v in (means, sds, log_weights))
    a = -0.5 / sds**2
    b = means / sds**2
    c = log_weights - np.log(sds) - 0.5 * means**2 / sds**2
    found: list[float] = []
    for i in range(means.size):
        for j in range(i + 1, means.size):
            both = np.roots([a[i] - a[j], b[i] - b[j], c[i] - c[j]])
            found.extend(both[np.isreal(both)].real)
    roots = np.unique(np.array(found))
    if roots.size == 0:
        probes = means[:1]
    else:
        probes = np.concatenate(([roots[0] - 1.0], (roots[:-1] + roots[1:]) / 2, [roots[-1] + 1.0]))
    winners = np.argmax(log_weights - np.log(sds) - 0.5 * ((probes[:, None] - means) / sds) ** 2, axis=1)
    change = winners[1:] != winners[:-1]
    return roots[change], np.concatenate((winners[:1], winners[1:][change]))
