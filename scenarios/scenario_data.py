"""The in-memory dataset of the scenarios: random images and labels, with optional CPU work
per sample (a slow pipeline) and OpenCV augmentation (threads per worker)."""

import numpy as np
import torch


class RandomImages(torch.utils.data.Dataset):
    """`length` random 3 x size x size images. `heavy` adds ~0.1 ms of NumPy work per sample
    (a batch of 64 then costs about one GPU step: one process falls behind, four keep up);
    `augment` adds OpenCV blur and warp on a 512 x 512 image (OpenCV starts a thread per
    core in every worker unless told otherwise)."""

    def __init__(self, length, size, heavy=False, augment=False):
        self.length = length
        self.size = size
        self.heavy = heavy
        self.augment = augment

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        rng = np.random.default_rng(index)
        if self.augment:
            import cv2

            big = rng.integers(0, 255, (512, 512, 3), dtype=np.uint8)
            big = cv2.GaussianBlur(big, (15, 15), 0)
            turn = cv2.getRotationMatrix2D((256, 256), float(index % 30), 1.0)
            big = cv2.warpAffine(big, turn, (512, 512))
            image = cv2.resize(big, (self.size, self.size)).astype(np.float32) / 255.0
            image = image.transpose(2, 0, 1)
        else:
            image = rng.standard_normal((3, self.size, self.size), dtype=np.float32)
        if self.heavy:
            work = rng.standard_normal((96, 96))
            for _ in range(2):
                work = np.tanh(work @ work.T / 96.0)
            image = image + np.float32(work[0, 0] * 1e-6)
        label = int(rng.integers(0, 10))
        return torch.from_numpy(np.ascontiguousarray(image)), label


def worker_init(one_thread):
    """A worker_init_fn: with `one_thread`, OpenCV and PyTorch use one thread per worker."""

    def init(_worker_id):
        if one_thread:
            import cv2

            cv2.setNumThreads(1)
            torch.set_num_threads(1)

    return init
