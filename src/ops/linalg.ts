/** Linear algebra: matmul (batch broadcasting, transpose flags), dot, outer, einsum. */
export {};
