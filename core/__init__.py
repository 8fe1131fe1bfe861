"""Runtime helpers every app may import: error pages and outages, whether a process is gone, request
limits, the socket's origin check. It imports no app of the project."""
