typedef struct {
  float s;
} P;
float f(float x, const P *p) { return x * p->s; }
