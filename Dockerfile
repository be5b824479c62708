# The offline generator, its CLI and the job service. Without a GPU the kernels are
# checked in the Triton interpreter; run with `--gpus all` on a CUDA host to measure them.
# Service: docker run -p 8000:8000 -e KERNELGEN_API_TOKENS='["<token>"]' IMAGE serve --host 0.0.0.0
# Generated code runs under bubblewrap, which needs namespaces: give the container --cap-add SYS_ADMIN, or
# --security-opt seccomp=unconfined (docs/security.md); without them model-written code is refused.
FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap gcc && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY agent agent
COPY kernelgen kernelgen
COPY server server
COPY storage storage
COPY prompts prompts
RUN pip install --no-cache-dir .
ENV KERNELGEN_DATABASE_URL=sqlite:////data/kernelgen.db KERNELGEN_WORK_DIR=/data/work \
    KERNELGEN_ARTIFACT_ROOT=/data/jobs
EXPOSE 8000
VOLUME ["/data"]
ENTRYPOINT ["kernelgen"]
CMD ["--help"]
