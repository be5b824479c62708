# The offline generator, its CLI and the job service, as the non-root user `kernelgen`. Generated code runs under
# bubblewrap, which a container running as a non-root user lets start only with three options (docs/service.md,
# "Running in a container"); without them model-written code and code specs are refused:
#   SANDBOX="--security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined"
#   one job:  docker run --rm --gpus all $SANDBOX -v kernelgen-data:/data IMAGE run "ReLU on x [64] float32"
#   service:  docker compose --profile gpu up (PostgreSQL beside it; --profile cpu on a host without a GPU), or
#             docker run --gpus all $SANDBOX -p 8000:8000 -v kernelgen-data:/data \
#                 -e KERNELGEN_API_TOKENS='["alice:<token>"]' IMAGE
# Without a GPU (no --gpus) the same image checks kernels in the Triton interpreter.
#
# One stage on purpose: gcc must stay in the final image (below), so a build stage would save nothing, and
# copying a finished environment out of one would put torch into a new multi-GB layer on every code change.
# Pinned to bookworm, CI's Debian: the same bubblewrap (0.8.0) and util-linux (prlimit, setpriv) that the
# sandbox is tested on.
FROM python:3.11-slim-bookworm

# gcc and libc6-dev: Triton compiles its C launcher with the system compiler the first time a kernel runs on a
# GPU, and gcc alone (without recommends) has no C headers. bubblewrap: the sandbox of generated code.
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/* \
    && for tool in bwrap gcc prlimit setpriv; do command -v "$tool" >/dev/null || { echo "no $tool" >&2; exit 1; }; done

ENV VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:$PATH PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONUNBUFFERED=1
RUN python -m venv /opt/venv

# torch and Triton first, in a layer of their own, so that changing the code does not download them again. Pinned to
# the pair every GPU run of docs/results.md was measured with (torch 2.11.0+cu130, Triton 3.6.0, the Triton that
# torch release requires), inside the pyproject's ranges (tests/test_container.py checks both). PyPI's torch wheel
# for Linux x86_64 is the CUDA build (it brings the nvidia-* runtime wheels), so the image measures kernels on a CUDA
# host given the GPU; with no GPU it runs the interpreter. For a smaller, CPU-only image (compose's cpu profile):
#   --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
# Triton then comes from PyPI on its own (the CPU build does not require it, and the interpreter needs it).
ARG TORCH_VERSION=2.11.0
ARG TRITON_VERSION=3.6.0
ARG TORCH_INDEX_URL=https://pypi.org/simple
RUN pip install --index-url "$TORCH_INDEX_URL" "torch==$TORCH_VERSION" \
    && pip install "triton==$TRITON_VERSION" \
    && python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"

# The project's other dependencies, read from pyproject.toml, then the project itself without them: a code
# change rebuilds only the last, small layer.
WORKDIR /src
COPY pyproject.toml README.md ./
# The pins go in again, so that no dependency can move torch or Triton off them.
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt "torch==$TORCH_VERSION" "triton==$TRITON_VERSION" && rm /tmp/requirements.txt
COPY agent agent
COPY kernelgen kernelgen
COPY server server
COPY storage storage
COPY prompts prompts
RUN pip install --no-deps . && rm -rf /src/build /src/*.egg-info

# The service runs as this user: bubblewrap then confines runs in a user namespace, and nothing the service
# writes on the volume belongs to root. A uid no host account is likely to have, because the sandbox's process
# limit counts every process of that uid on the host. /data is created and owned here so that a new named
# volume inherits the owner.
RUN useradd --create-home --uid 10001 --user-group kernelgen \
    && mkdir -p /data && chown kernelgen:kernelgen /data
# The driver's libraries are mounted by the NVIDIA container toolkit; compute is what torch and Triton need.
ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    KERNELGEN_DATABASE_URL=sqlite:////data/kernelgen.db KERNELGEN_WORK_DIR=/data/work \
    KERNELGEN_ARTIFACT_ROOT=/data/jobs
USER kernelgen
# `kernelgen run` writes its default kernelgen_out/ under the working folder, so that is the volume too.
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8000

# /healthz needs no token and answers 503 when the database does not answer (urlopen raises, the check fails).
# A container started for `kernelgen run` serves nothing and shows "unhealthy"; that does not stop it.
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('KERNELGEN_PORT', '8000'), timeout=8)"]

ENTRYPOINT ["kernelgen"]
# The service refuses to listen beyond loopback until tokens or users exist (KERNELGEN_API_TOKENS, `users add`).
# The port is left to KERNELGEN_PORT (default 8000), the one the healthcheck reads.
CMD ["serve", "--host", "0.0.0.0"]
