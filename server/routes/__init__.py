"""The API's routers, in the order the app mounts them."""

from server.routes import artifacts, batches, events, health, jobs, patterns, read, threads
from server.web import page

ROUTERS = (jobs.router, read.router, events.router, artifacts.router, patterns.router, threads.router,
           batches.router)
PUBLIC_ROUTERS = (health.router, page.router)  # the page holds no data: its script asks with the token
