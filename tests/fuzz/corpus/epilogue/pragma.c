#pragma clang __debug crash
float f(float x) { return x; }
