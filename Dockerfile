# The offline generator and its CLI. Without a GPU the kernels are checked in the
# Triton interpreter; run with `--gpus all` on a CUDA host to measure them.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY agent agent
COPY kernelgen kernelgen
COPY server server
COPY storage storage
RUN pip install --no-cache-dir .
ENV KERNELGEN_DATABASE_URL=sqlite:////data/kernelgen.db KERNELGEN_WORK_DIR=/data/work
VOLUME ["/data"]
ENTRYPOINT ["kernelgen"]
CMD ["--help"]
