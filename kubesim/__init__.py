"""The in-process Kubernetes API server used by the tests and `runtimeclass-syncer demo`
(../shared/spec/test-apiserver.md). It speaks real HTTP, so the syncer, kubernetes-asyncio and
kubectl talk to it as they would to a kube-apiserver."""
