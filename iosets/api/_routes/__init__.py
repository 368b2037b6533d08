"""The HTTP routes, one module per resource, each owning its ``router``: parse the request, call the service, answer."""
