/** Computer vision on jtorch: the model zoo ({@code models}), image datasets ({@code datasets}) and transforms. */
package org.jtorch.vision;
