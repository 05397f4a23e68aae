/** Registers every ONNX op handler (one file per family). */
import "./elementwise.js";
import "./shape.js";
import "./creation.js";
import "./reduce.js";
import "./nn.js";
import "./control-flow.js";
import "./loss.js";
import "./attention.js";
import "./resize.js";
import "./recurrent.js";
import "./sequence.js";
import "./composite.js";
import "./quantize.js";
import "./grid-sample.js";
import "./data-dependent.js";
import "./training.js";
import "./tfidf.js";
