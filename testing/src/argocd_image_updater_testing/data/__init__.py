"""Reference data of the fakes: Argo CD's Application CRD and REST API description."""
