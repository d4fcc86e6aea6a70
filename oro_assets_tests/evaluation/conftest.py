import pytest


@pytest.fixture(scope="session")
def world():
    from oro_assets.arena.generator import build_world

    return build_world(7, n_problems=40, n_products=400, variant_share=0.0)


@pytest.fixture(scope="session")
def product_problems(world):
    return [p for p in world.problems if p["category"] == "Product"][:3]


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """Tiny models run fastest on one thread; two spinning threads crawl on a shared, loaded CI box."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
