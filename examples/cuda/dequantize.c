/* A FLOAT16 table's element scaled into FLOAT32 as the kernel gathers it. */
float dequantize(float16_t x) { return (float)x * 0.25f; }
