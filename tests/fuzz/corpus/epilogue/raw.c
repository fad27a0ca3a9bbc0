float f(float x) {
  float (*g)(float) = (float (*)(float))0x1234;
  return g(x) + *(float *)0x10;
}
