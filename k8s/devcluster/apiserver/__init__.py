"""A Kubernetes API server stand-in that answers the way a real kube-apiserver does wherever the
fibermpi controller, nodes or kubectl touch it."""
