import numpy as np
from helpers import arrays, check, dtypes, shapes
from hypothesis import given
from hypothesis import strategies as st


@given(st.data())
def test_sin(data):
    dt = data.draw(dtypes())
    x = data.draw(arrays(dt, data.draw(shapes())))
    check(lambda x: np.sin(x), lambda x: np.sin(x), x=x)
