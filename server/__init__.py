"""The HTTP job service (FastAPI); its routes arrive with the job-service work."""
