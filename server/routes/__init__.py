"""The API's routers, in the order the app mounts them."""

from server.routes import artifacts, events, health, jobs, patterns, read

ROUTERS = (jobs.router, read.router, events.router, artifacts.router, patterns.router)
PUBLIC_ROUTERS = (health.router,)
