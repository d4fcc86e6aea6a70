import pytest


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """Tiny models run fastest on one thread; two spinning threads crawl on a shared, loaded CI box."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
