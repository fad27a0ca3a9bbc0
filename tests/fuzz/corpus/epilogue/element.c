float f(float x) { return x * 2.0f + 1.0f; }
