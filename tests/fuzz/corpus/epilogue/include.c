#include "/etc/passwd"
float f(float x) { return x; }
