"""Local stand-ins for the outside world: a real registry process, test token server, Kubernetes API
and Argo CD API fakes, git servers. Used by the built-in demo, the tests and the benchmarks; never by
the controller itself."""
