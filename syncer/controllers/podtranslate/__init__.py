"""Pure translation of a virtual pod's spec for the host, one module per concern (behaviour.md section
3.1), after vcluster's pod translator (`pkg/controllers/resources/pods/translate/translator.go`)."""
