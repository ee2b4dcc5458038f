# The image of deploy/kubernetes.yaml (docs/cluster.md#kubernetes):
#
#   docker build -t bert-tf:0.1.0 .
#
# The repository in /app, installed as README.md installs it (Python 3.11, `pip install -e`),
# without the test extra: the image trains, it runs no tests. Then TensorFlow's CUDA libraries
# (NVIDIA's wheels, TensorFlow's `and-cuda` extra, the release setup.py pins) for the GPUs the
# manifest asks for: without them TensorFlow would train on the pods' CPUs.
FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore
WORKDIR /app
COPY . .
RUN pip install -e "."
RUN pip install "tensorflow[and-cuda]~=2.21.0"
