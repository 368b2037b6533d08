"""A fitted gradient-boosting regressor's trees as flat arrays, for one prediction in microseconds.

scikit-learn's ``HistGradientBoostingRegressor.predict`` costs about 1 ms per call
whatever the number of rows (input checks, then a Python loop over the trees). A job
estimated at submit time is a single row: :class:`FlatTrees` walks every tree at
once with numpy and gives the same number, bit for bit (the trees' leaf values are
added in the same order, after the same baseline).
"""

import numpy as np


class FlatTrees:
    """The nodes of a fitted ``HistGradientBoostingRegressor`` (numeric features, squared error) in flat arrays.

    Node k of the flat arrays tests ``x[feature[k]] <= threshold[k]`` and continues at
    ``left[k]`` or ``right[k]``, or at ``missing[k]`` when that value is NaN; a leaf
    continues at itself, so ``depth`` steps from the roots reach every tree's leaf.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.ensemble import HistGradientBoostingRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> model = HistGradientBoostingRegressor(max_iter=20).fit(X, X[:, 0] - X[:, 1])
    >>> bool(FlatTrees(model).predict_one(np.array([0.5, np.nan])) == model.predict([[0.5, np.nan]])[0])
    True
    """

    def __init__(self, model):
        trees = [predictor.nodes for (predictor,) in model._predictors]  # one tree per iteration: a regressor
        sizes = np.array([len(nodes) for nodes in trees])
        self.roots = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        nodes = np.concatenate(trees)
        here = np.arange(len(nodes))
        leaf = nodes["is_leaf"].astype(bool)
        offset = np.repeat(self.roots, sizes)
        self.feature = np.where(leaf, 0, nodes["feature_idx"]).astype(np.intp)
        self.threshold = nodes["num_threshold"].astype(np.float64)
        self.left = np.where(leaf, here, nodes["left"].astype(np.intp) + offset)
        self.right = np.where(leaf, here, nodes["right"].astype(np.intp) + offset)
        self.missing = np.where(nodes["missing_go_to_left"].astype(bool), self.left, self.right)
        self.split_on = [np.flatnonzero(~leaf & (self.feature == f)) for f in range(model.n_features_in_)]
        self.value = nodes["value"].astype(np.float64)
        self.depth = int(nodes["depth"].max())
        self.baseline = float(np.asarray(model._baseline_prediction).ravel()[0])

    def predict_one(self, x: np.ndarray) -> float:
        """The model's prediction for one feature row ``x`` (float64, NaN for a missing value)."""
        child = np.where(x.take(self.feature) <= self.threshold, self.left, self.right)
        for f in np.flatnonzero(np.isnan(x)):  # the nodes that split on a missing value
            nodes = self.split_on[f]
            child[nodes] = self.missing.take(nodes)
        node = self.roots
        for _ in range(self.depth):
            node = child.take(node)
        return float(np.cumsum(np.concatenate(([self.baseline], self.value.take(node))))[-1])
