"""The development cluster: a Kubernetes API server stand-in, nodes that run pods as local
processes, and a scheduler, for trying and testing the FiberJob operator without a cluster."""
