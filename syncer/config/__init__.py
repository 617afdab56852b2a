"""Configuration: the vcluster.yaml model and the Kubernetes label selector."""
