"""Reductions and scans: reduce (sums, means, norms, extrema, arg-extrema, logsumexp), scan, sort, segment
sums, softmax, and the online log-sum-exp they share."""
