import os

# FlashInfer's version is pinned in requirements/cuda.txt and docker/Dockerfile.
VLLM_USE_FLASHINFER_SAMPLER = os.getenv("VLLM_USE_FLASHINFER_SAMPLER", "1") == "1"
