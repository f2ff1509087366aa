"""Data files: the upstream CustomResourceDefinitions and the Argo CD REST API description."""
